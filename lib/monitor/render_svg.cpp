// --plot: a hand-written SVG of three panels over the seconds since the run started (a resumed run's
// invocations end to end, each resume a dashed line): the training loss (the evaluations' test loss, a
// language model's validation loss, as dots), the throughput (samples/s of the logged steps) and every
// rank's wait + comm (ms per logged step: where a rank waits for the others, before or inside the
// exchange; a line breaks where a rank has none, as after a resume on fewer ranks), each with axes, ticks
// and a legend. Colours are fixed (the test finds them in a rendering): loss #1f77b4, test loss #ff7f0e,
// throughput #2ca02c, ranks from rank_colour(), resumes #555.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "lib/monitor/render.h"

namespace dp::monitor {
namespace {

constexpr double width = 900, panel_height = 240, left = 80, right = 170, top_margin = 50, gap = 75;

const char* rank_colour(int rank) {
  static const char* colours[] = {"#9467bd", "#d62728", "#17becf", "#8c564b",
                                  "#e377c2", "#bcbd22", "#7f7f7f", "#ff9896"};
  return colours[rank % 8];
}

struct Series {
  std::string label, colour;
  std::vector<std::pair<double, double>> points;  // (seconds, value); a NaN value breaks the line
  bool dots = false;
};

// 1, 2 or 5 times a power of ten, about range / 5.
double tick_step(double range) {
  if (range <= 0) return 1;
  const double raw = range / 5, power = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * power >= raw) return m * power;
  return 10 * power;
}

std::string escaped(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
  return out;
}

std::string panel(double top, const std::string& title, const std::string& y_label, const std::vector<Series>& series,
                  double x_max, const std::vector<ResumePoint>& resumes) {
  double y_min = 0, y_max = 0;
  bool any = false;
  for (const Series& s : series)
    for (const auto& [x, y] : s.points) {
      if (std::isnan(y)) continue;
      y_max = any ? std::max(y_max, y) : y;
      y_min = any ? std::min(y_min, y) : std::min(0.0, y);
      any = true;
    }
  if (y_max <= y_min) y_max = y_min + 1;
  const double y_step = tick_step(y_max - y_min), x_step = tick_step(x_max);
  y_max = std::ceil(y_max / y_step) * y_step;
  x_max = std::ceil(x_max / x_step) * x_step;  // the axis ends on a tick
  const double plot_w = width - left - right, bottom = top + panel_height;
  const auto px = [&](double x) { return left + x / x_max * plot_w; };
  const auto py = [&](double y) { return bottom - (y - y_min) / (y_max - y_min) * panel_height; };
  std::string out = fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"15\" font-weight=\"bold\">{}</text>\n", left,
                                top - 10, escaped(title));
  out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#000\"/>\n", left, top,
                     plot_w, panel_height);
  for (double y = std::ceil(y_min / y_step) * y_step; y <= y_max + y_step / 2; y += y_step)
    out += fmt::format("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>"
                       "<text x=\"{3}\" y=\"{4:.1f}\" font-size=\"11\" text-anchor=\"end\">{5:g}</text>\n",
                       left, left + plot_w, py(y), left - 6, py(y) + 4, y);
  for (double x = 0; x <= x_max + x_step / 2; x += x_step)
    out += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#000\"/>"
                       "<text x=\"{0:.1f}\" y=\"{3}\" font-size=\"11\" text-anchor=\"middle\">{4:g}</text>\n",
                       px(x), bottom, bottom + 5, bottom + 18, x);
  out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 {} {})\">"
                     "{}</text>\n", left - 55, top + panel_height / 2, left - 55, top + panel_height / 2, escaped(y_label));
  out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">seconds since the run "
                     "started{}</text>\n", left + plot_w / 2, bottom + 34,
                     resumes.empty() ? "" : " (each resume going on from the last line before it)");
  for (const ResumePoint& r : resumes)
    out += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#555\" stroke-dasharray=\"6 4\"/>"
                       "<text x=\"{3:.1f}\" y=\"{4}\" font-size=\"11\" fill=\"#555\">resumed{5}</text>\n",
                       px(r.t), top, bottom, px(r.t) + 4, top + 12,
                       r.ranks > 0 ? fmt::format(" on {}", r.ranks) : std::string());
  for (size_t i = 0; i < series.size(); ++i) {
    const Series& s = series[i];
    // Runs of points without a break: a line each (a lone point: a dot).
    std::vector<std::vector<std::pair<double, double>>> runs(1);
    for (const auto& p : s.points) {
      if (std::isnan(p.second)) {
        if (!runs.back().empty()) runs.emplace_back();
      } else {
        runs.back().push_back(p);
      }
    }
    for (const auto& run : runs) {
      if (s.dots || run.size() == 1) {
        for (const auto& [x, y] : run)
          out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"/>\n", px(x), py(y), s.colour);
      } else if (!run.empty()) {
        out += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2.5\" points=\"", s.colour);
        for (const auto& [x, y] : run) out += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
        out += "\"/>\n";
      }
    }
    const double ly = top + 14 + 18 * double(i), lx = left + plot_w + 14;
    out += fmt::format("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" stroke=\"{3}\" stroke-width=\"4\"/>"
                       "<text x=\"{4}\" y=\"{5}\" font-size=\"12\">{6}</text>\n",
                       lx, lx + 22, ly, s.colour, lx + 28, ly + 4, escaped(s.label));
  }
  return out;
}

}  // namespace

std::string svg_plot(const Snapshot& s) {
  double x_max = 1;
  Series loss{"train loss", "#1f77b4", {}},
      test{s.language_model ? "validation loss" : "test loss", "#ff7f0e", {}, true}, speed{"samples/s", "#2ca02c", {}};
  std::vector<Series> waits;
  size_t ranks = size_t(std::max(0, s.ranks));  // every rank of any invocation
  for (const StepPoint& p : s.curve) ranks = std::max(ranks, p.blocked_ms.size());
  for (size_t r = 0; r < ranks; ++r) waits.push_back({fmt::format("rank {}", r), rank_colour(int(r)), {}});
  for (const ResumePoint& r : s.resumes) x_max = std::max(x_max, r.t);
  for (const StepPoint& p : s.curve) {
    x_max = std::max(x_max, p.t);
    loss.points.push_back({p.t, p.loss});
    speed.points.push_back({p.t, p.samples_per_sec});
    for (size_t r = 0; r < waits.size(); ++r)
      waits[r].points.push_back({p.t, r < p.blocked_ms.size() && p.blocked_ms[r] >= 0 ? p.blocked_ms[r] : NAN});
  }
  std::vector<Series> loss_panel{loss};
  for (const EvalPoint& e : s.evals) {
    test.points.push_back({e.t, e.test_loss});
    x_max = std::max(x_max, e.t);
  }
  if (!test.points.empty()) loss_panel.push_back(test);
  const double height = top_margin + 3 * panel_height + 3 * gap + 20;
  std::string out = fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
                                "width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\">\n"
                                "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n"
                                "<text x=\"{2}\" y=\"26\" font-size=\"18\">dptrain run {3}{4}</text>\n",
                                width, height, left, escaped(s.dir), s.name.empty() ? "" : " (" + escaped(s.name) + ")");
  std::string slow;
  for (int r : s.slow.slow) slow += (slow.empty() ? "" : ", ") + std::to_string(r);
  const std::string title_suffix = slow.empty() ? "" : " (slow: rank " + slow + ")";
  out += panel(top_margin + 20, "loss", s.language_model ? "loss (nats per token)" : "loss", loss_panel, x_max, s.resumes);
  out += panel(top_margin + 20 + panel_height + gap, "throughput", "samples/s", {speed}, x_max, s.resumes);
  out += panel(top_margin + 20 + 2 * (panel_height + gap), "wait + comm per rank" + title_suffix, "ms per logged step",
               waits, x_max, s.resumes);
  return out + "</svg>\n";
}

}  // namespace dp::monitor
