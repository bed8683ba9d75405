// The text view: a header, progress and ETA, the loss curve as a sparkline (with the newest evaluation:
// test accuracy, or a language model's validation loss and perplexity), the speed, the resumes, the
// per-rank table of the newest invocation (speed, batch share, the compute / communication / wait /
// update split, memory, group or stage) and the slow-rank line with its reason.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "lib/monitor/render.h"

namespace dp::monitor {
namespace {

std::string progress_bar(double fraction, int cells) {
  const int full = int(std::lround(std::clamp(fraction, 0.0, 1.0) * cells));
  std::string bar = "[";  // appended, not concatenated: g++ 12 warns (-Wrestrict) on "[" + std::string
  bar.append(size_t(full), '#').append(size_t(cells - full), '-') += ']';
  return bar;
}

// The loss over the logged steps, resampled to `cells` characters of eight heights.
std::string sparkline(const std::vector<StepPoint>& curve, int cells) {
  static const char* levels[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  if (curve.empty()) return "";
  const int n = std::min<int>(cells, int(curve.size()));
  std::vector<double> v(size_t(n), 0);
  for (int i = 0; i < n; ++i) {  // the mean of each cell's steps
    const size_t a = size_t(i) * curve.size() / size_t(n), b = size_t(i + 1) * curve.size() / size_t(n);
    for (size_t j = a; j < b; ++j) v[size_t(i)] += curve[j].loss / double(b - a);
  }
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  std::string out;
  for (double x : v) out += levels[*hi > *lo ? int(std::lround((x - *lo) / (*hi - *lo) * 7)) : 0];
  return out;
}

std::string optional_bytes(double b) { return b < 0 ? "-" : bytes_text(b); }

}  // namespace

double perplexity(const EvalPoint& e) { return e.perplexity >= 0 ? e.perplexity : std::exp(e.test_loss); }

namespace {

}  // namespace

std::string duration_text(double seconds) {
  if (seconds < 0) return "-";
  const int64_t s = int64_t(std::llround(seconds));
  if (s >= 3600) return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
  if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

std::string bytes_text(double bytes) {
  if (bytes < 0) return "-";
  if (bytes < 1e3) return fmt::format("{:.0f} B", bytes);
  if (bytes < 1e6) return fmt::format("{:.1f} kB", bytes / 1e3);
  if (bytes < 1e9) return fmt::format("{:.1f} MB", bytes / 1e6);
  return fmt::format("{:.2f} GB", bytes / 1e9);
}

std::string text_view(const Snapshot& s, int width) {
  std::string out;
  const std::string what = s.name.empty() ? "" : fmt::format("  {}, strategy {}, {} rank(s){}", s.name, s.strategy,
                                                             s.ranks, s.device.empty() ? "" : ", " + s.device);
  std::string state = s.state;
  std::transform(state.begin(), state.end(), state.begin(), ::toupper);
  out += fmt::format("dptrain monitor {}{}  {}\n", s.dir, what, state);
  if (s.curve.empty() && !s.summary) {
    out += "waiting for the first logged step (metrics.jsonl has no train line yet)\n";
    return out;
  }
  const std::string of = s.total_steps > 0 ? fmt::format(" of {}", s.total_steps) : " (total unknown)";
  const int bar = std::max(10, std::min(40, width - 80));
  out += fmt::format("progress {} {:5.1f}%  step {}{}, epoch {}  elapsed {}  ETA {}  ({:.1f} ms/step)\n",
                     progress_bar(s.progress, bar), 100 * s.progress, s.step, of, s.epoch,
                     duration_text(s.elapsed_seconds), s.state == "finished" ? "done" : duration_text(s.eta_seconds),
                     1000 * s.seconds_per_step);
  out += fmt::format("loss     {:.4f}  {}  (logged steps {}-{})", s.loss,
                     sparkline(s.curve, std::max(10, std::min(60, width - 50))),
                     s.curve.empty() ? 0 : s.curve.front().step, s.step);
  if (s.last_eval)
    out += s.language_model ? fmt::format("  validation loss {:.4f} (perplexity {:.2f}) at step {}",
                                          s.last_eval->test_loss, perplexity(*s.last_eval), s.last_eval->step)
                            : fmt::format("  test accuracy {:.4f} at step {}", s.last_eval->test_accuracy,
                                          s.last_eval->step);
  out += "\n";
  if (s.window_steps > 0)
    out += fmt::format("speed    {:.0f} samples/s over the last {} logged step(s), {}-{}{}\n", s.samples_per_sec,
                       s.window_steps, s.window_first_step, s.window_last_step,
                       s.grouping.empty() ? "" : "; groups " + s.grouping);
  if (!s.resumes.empty()) {
    const ResumePoint& r = s.resumes.back();
    out += fmt::format("resumed  {} time(s); the newest {}{}{}\n", s.resumes.size(),
                       r.first_step > 0 ? fmt::format("from step {}", r.first_step - 1) : std::string("invocation"),
                       r.ranks > 0 ? fmt::format(" on {} rank(s)", r.ranks) : std::string(),
                       s.window_steps > 0 ? "; ranks and speeds are its own" : ": no step logged yet");
  }
  if (s.summary)
    out += s.language_model
               ? fmt::format("finished validation loss {:.4f} nats per token, perplexity {:.2f}, {:.0f} samples/s, "
                             "{} wall, {} steps\n", s.summary->test_loss, s.summary->perplexity,
                             s.summary->samples_per_sec, duration_text(s.summary->wall_seconds), s.summary->steps)
               : fmt::format("finished test accuracy {:.4f}, test loss {:.4f}, {:.0f} samples/s, {} wall, {} steps\n",
                             s.summary->test_accuracy, s.summary->test_loss, s.summary->samples_per_sec,
                             duration_text(s.summary->wall_seconds), s.summary->steps);
  if (s.state == "stalled")
    out += fmt::format("stalled  no new line for {} and no summary.json: the run stopped or hangs\n",
                       duration_text(s.seconds_since_write));
  out += "\n";
  const bool peaks = s.summary.has_value();
  out += fmt::format("{:>4} {:>5} {:>9} {:>6} {:>9} {:>8} {:>8} {:>8} {:>11} {:>9} {:>9} {:>9} {:>4}\n", "rank",
                     "group", "samples/s", "share", "compute", "comm", "wait", "update", "split c/m/w",
                     "alloc pk", peaks ? "rss pk" : "resident", "gpu mem", "gpu%");
  for (const RankFigures& r : s.rank_figures) {
    const double total = r.compute_ms + r.comm_ms + r.wait_ms + r.update_ms;
    const auto pct = [total](double x) { return total > 0 ? int(std::lround(100 * x / total)) : 0; };
    const bool slow = std::find(s.slow.slow.begin(), s.slow.slow.end(), r.rank) != s.slow.slow.end();
    // A rank without samples in the window trains nothing (a pipeline plan can leave a rank out).
    const std::string where = r.samples == 0 ? "idle"
                              : r.stage >= 0 ? fmt::format("s{}", r.stage)
                              : r.group >= 0 ? fmt::format("g{}", r.group)
                                             : "-";
    out += fmt::format("{:>4} {:>5} {:>9.0f} {:>5.1f}% {:>6.2f} ms {:>5.2f} ms {:>5.2f} ms {:>5.2f} ms {:>11} {:>9} "
                       "{:>9} {:>9} {:>4}{}\n",
                       r.rank, where, r.compute_samples_per_sec, 100 * r.share, r.compute_ms, r.comm_ms, r.wait_ms,
                       r.update_ms, fmt::format("{}/{}/{}", pct(r.compute_ms), pct(r.comm_ms), pct(r.wait_ms)),
                       optional_bytes(r.allocated_peak_bytes),
                       optional_bytes(peaks ? r.resident_peak_bytes : r.resident_bytes),
                       optional_bytes(r.gpu_used_bytes),
                       r.gpu_util_percent < 0 ? "-" : fmt::format("{:.0f}", r.gpu_util_percent),
                       slow ? "  <- slow" : "");
  }
  out += "\n";
  out += s.slow.slow.empty() ? "slow: none (" + s.slow.reason + ")\n" : "slow " + s.slow.reason + "\n";
  return out;
}

}  // namespace dp::monitor
