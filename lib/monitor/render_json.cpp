// --json: the snapshot as one JSON object (field names in man dptrain-monitor(1)).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "lib/core/json.h"
#include "lib/monitor/render.h"

namespace dp::monitor {
namespace {

// A number, or null for the monitor's "not measured / unknown" (negative).
std::string or_null(double x, const char* format = "{:.0f}") {
  return x < 0 ? "null" : fmt::format(fmt::runtime(format), x);
}

}  // namespace

std::string json_view(const Snapshot& s) {
  std::string ranks;
  for (const RankFigures& r : s.rank_figures)
    ranks += fmt::format(
        "{}{{\"rank\":{},\"group\":{},\"stage\":{},\"samples\":{},\"compute_samples_per_sec\":{:.1f},"
        "\"compute_ms_per_sample\":{:.5f},\"share\":{:.4f},\"compute_ms\":{:.3f},\"comm_ms\":{:.3f},"
        "\"wait_ms\":{:.3f},\"update_ms\":{:.3f},\"allocated_peak_bytes\":{},\"resident_bytes\":{},"
        "\"gpu_used_bytes\":{},\"gpu_util_percent\":{},\"resident_peak_bytes\":{},\"expected_ms_per_sample\":{}}}",
        ranks.empty() ? "" : ",", r.rank, r.group < 0 ? "null" : std::to_string(r.group),
        r.stage < 0 ? "null" : std::to_string(r.stage), r.samples, r.compute_samples_per_sec,
        r.compute_ms_per_sample, r.share, r.compute_ms, r.comm_ms, r.wait_ms, r.update_ms,
        or_null(r.allocated_peak_bytes), or_null(r.resident_bytes), or_null(r.gpu_used_bytes),
        or_null(r.gpu_util_percent, "{:.1f}"), or_null(r.resident_peak_bytes), or_null(r.expected_ms_per_sample, "{:.5f}"));
  std::string ratios;
  for (double x : s.slow.ratio) ratios += fmt::format("{}{:.3f}", ratios.empty() ? "" : ",", x);
  std::string loss_curve;
  for (const StepPoint& p : s.curve)
    loss_curve += fmt::format("{}[{},{:.3f},{}]", loss_curve.empty() ? "" : ",", p.step, p.t, p.loss);
  // A language model's evaluations are a validation loss (nats per token) and its perplexity, no accuracy.
  const std::string eval =
      !s.last_eval ? "null"
      : s.language_model
          ? fmt::format("{{\"step\":{},\"test_loss\":{},\"perplexity\":{:.4f}}}", s.last_eval->step,
                        s.last_eval->test_loss, perplexity(*s.last_eval))
          : fmt::format("{{\"step\":{},\"test_loss\":{},\"test_accuracy\":{}}}", s.last_eval->step,
                        s.last_eval->test_loss, s.last_eval->test_accuracy);
  const std::string summary =
      !s.summary ? "null"
                 : fmt::format("{{{},\"test_loss\":{},\"samples_per_sec\":{:.1f},\"wall_seconds\":{:.3f},\"steps\":{}}}",
                               s.language_model ? fmt::format("\"perplexity\":{:.4f}", s.summary->perplexity)
                                                : fmt::format("\"test_accuracy\":{}", s.summary->test_accuracy),
                               s.summary->test_loss, s.summary->samples_per_sec, s.summary->wall_seconds,
                               s.summary->steps);
  std::string resumes;
  for (const ResumePoint& r : s.resumes)
    resumes += fmt::format("{}{{\"t\":{:.3f},\"first_step\":{},\"ranks\":{}}}", resumes.empty() ? "" : ",", r.t,
                           r.first_step > 0 ? std::to_string(r.first_step) : "null",
                           r.ranks > 0 ? std::to_string(r.ranks) : "null");
  return fmt::format(
      "{{\"run_dir\":{},\"name\":{},\"strategy\":{},\"device\":{},\"state\":{},\"ranks\":{},"
      "\"language_model\":{},\"resumes\":[{}],\"step\":{},"
      "\"epoch\":{},\"total_steps\":{},\"progress\":{:.4f},\"eta_seconds\":{},\"seconds_per_step\":{:.5f},"
      "\"elapsed_seconds\":{:.3f},\"seconds_since_write\":{:.1f},\"loss\":{},\"samples_per_sec\":{:.1f},"
      "\"window\":{{\"first_step\":{},\"last_step\":{},\"steps\":{}}},\"grouping\":{},"
      "\"slow\":{{\"ranks\":[{}],\"ratio\":[{}],\"waiting\":[{}],\"reason\":{}}},\"rank_figures\":[{}],"
      "\"last_eval\":{},\"summary\":{},\"loss_curve\":[{}]}}\n",
      json_quoted(s.dir), json_quoted(s.name), json_quoted(s.strategy), json_quoted(s.device), json_quoted(s.state),
      s.ranks, s.language_model, resumes, s.step, s.epoch, s.total_steps > 0 ? std::to_string(s.total_steps) : "null", s.progress,
      or_null(s.eta_seconds, "{:.1f}"), s.seconds_per_step, s.elapsed_seconds, s.seconds_since_write, s.loss,
      s.samples_per_sec, s.window_first_step, s.window_last_step, s.window_steps,
      s.grouping.empty() ? "null" : json_quoted(s.grouping), fmt::join(s.slow.slow, ","), ratios,
      fmt::join(s.slow.waiting, ","), json_quoted(s.slow.reason), ranks, eval, summary, loss_curve);
}

}  // namespace dp::monitor
