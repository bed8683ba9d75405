// The scaling of the strategies (scaling.h) as a table, one JSON object and an SVG chart.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "lib/compare/scaling.h"
#include "lib/core/json.h"

namespace dp::compare {
namespace {

std::string cell_text(const ScalingCell& c) {
  if (!c.planned) return "no plan";
  if (!c.fits) return "no fit";
  if (c.simulated <= 0) return fmt::format("{:.0f}/-", c.predicted);  // no simulation model (cgp-pipeline)
  return fmt::format("{:.0f}/{:.0f}", c.predicted, c.simulated);
}

}  // namespace

std::string scaling_text(const Scaling& s) {
  std::string out = fmt::format("samples/s predicted by the model / simulated ({} steps, noise {:.3g}, seed {}); "
                                "ranks drawn from the job's kinds, the global batch growing with them\n"
                                "step times: {}\n  {:<38}", s.steps, s.noise, s.seed, s.timing_basis, "strategy");
  for (int64_t n : s.workers) out += fmt::format(" {:>17}", fmt::format("{} workers", n));
  out += "\n";
  for (size_t k = 0; k < s.strategies.size(); ++k) {
    out += fmt::format("  {:<38}", s.strategies[k]);
    for (size_t i = 0; i < s.workers.size(); ++i) out += fmt::format(" {:>17}", cell_text(s.cells[i][k]));
    out += "\n";
  }
  out += "  planning and simulating took:";
  for (size_t i = 0; i < s.workers.size(); ++i) {
    double total = 0;
    for (const ScalingCell& c : s.cells[i]) total += c.seconds;
    out += fmt::format(" {:.2f} s ({} workers){}", total, s.workers[i], i + 1 < s.workers.size() ? "," : "\n");
  }
  for (size_t i = 0; i < s.workers.size(); ++i)
    for (size_t k = 0; k < s.strategies.size(); ++k)
      if (!s.cells[i][k].planned || !s.cells[i][k].error.empty())
        out += fmt::format("  {} at {} workers: {}\n", s.strategies[k], s.workers[i], s.cells[i][k].error);
  return out;
}

std::string scaling_json(const Scaling& s) {
  std::string rows;
  for (size_t i = 0; i < s.workers.size(); ++i)
    for (size_t k = 0; k < s.strategies.size(); ++k) {
      const ScalingCell& c = s.cells[i][k];
      rows += fmt::format("{}{{\"workers\": {}, \"strategy\": {}, \"planned\": {}, \"error\": {}, \"fits\": {}, "
                          "\"predicted_samples_per_s\": {:.6g}, \"simulated_samples_per_s\": {:.6g}, "
                          "\"seconds\": {:.4g}}}", rows.empty() ? "" : ", ", s.workers[i],
                          json_quoted(s.strategies[k]), c.planned ? "true" : "false",
                          c.error.empty() ? "null" : json_quoted(c.error), c.fits ? "true" : "false", c.predicted,
                          c.simulated, c.seconds);
    }
  return fmt::format("{{\"steps\": {}, \"noise\": {}, \"seed\": {}, \"timing_basis\": {}, \"points\": [{}]}}\n", s.steps,
                     s.noise, s.seed, json_quoted(s.timing_basis), rows);
}

std::string scaling_svg(const Scaling& s, const std::string& title) {
  constexpr double W = 720, H = 440, left = 70, right = 250, top = 40, bottom = 50;
  double lo = 0, hi = 0;
  for (const auto& row : s.cells)
    for (const ScalingCell& c : row)
      if (c.planned && c.fits && c.simulated > 0) {
        lo = lo == 0 ? c.simulated : std::min(lo, c.simulated);
        hi = std::max(hi, c.simulated);
      }
  if (hi <= 0) lo = 1, hi = 10;
  const double ylo = std::floor(std::log10(lo)), yhi = std::max(ylo + 1, std::ceil(std::log10(hi)));
  const double xlo = std::log10(double(*std::min_element(s.workers.begin(), s.workers.end())));
  const double xhi = std::max(xlo + 1e-9, std::log10(double(*std::max_element(s.workers.begin(), s.workers.end()))));
  auto x = [&](double n) { return left + (std::log10(n) - xlo) / (xhi - xlo) * (W - left - right); };
  auto y = [&](double v) { return H - bottom - (std::log10(v) - ylo) / (yhi - ylo) * (H - top - bottom); };
  static const char* colours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2"};
  std::string out = fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
                                "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
                                "fill=\"white\"/>\n<text x=\"{}\" y=\"22\" font-size=\"14\">{}</text>\n",
                                W, H, left, title);
  out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"black\"/>\n<line x1=\"{0}\" y1=\"{3}\" "
                     "x2=\"{0}\" y2=\"{1}\" stroke=\"black\"/>\n", left, H - bottom, W - right, top);
  for (double e = ylo; e <= yhi; ++e)
    out += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">1e{:.0f}</text>\n", left - 6, y(std::pow(10, e)) + 4, e);
  for (int64_t n : s.workers)
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", x(double(n)), H - bottom + 16, n);
  out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">workers (simulated, {} steps)</text>\n",
                     (left + W - right) / 2, H - 12, s.steps);
  out += fmt::format("<text x=\"16\" y=\"{}\" transform=\"rotate(-90 16 {})\" text-anchor=\"middle\">samples/s</text>\n",
                     H / 2, H / 2);
  for (size_t k = 0; k < s.strategies.size(); ++k) {
    const char* colour = colours[k % std::size(colours)];
    std::string points;
    for (size_t i = 0; i < s.workers.size(); ++i) {
      const ScalingCell& c = s.cells[i][k];
      if (c.planned && c.fits && c.simulated > 0)
        points += fmt::format("{:.1f},{:.1f} ", x(double(s.workers[i])), y(c.simulated));
    }
    if (!points.empty())
      out += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n", colour, points);
    out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"3\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>\n",
                       W - right + 12, top + 16 * double(k) + 4, colour, W - right + 30, top + 16 * double(k) + 9,
                       s.strategies[k]);
  }
  return out + "</svg>\n";
}

}  // namespace dp::compare
