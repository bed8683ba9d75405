// The JSON of strategy "cgp"'s metrics lines (see cgp_lines.h).
#include "lib/train/cgp/cgp_lines.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace dp {

std::string json_line(const RegroupLine& l) {
  return fmt::format("{{\"kind\":\"regroup\",\"step\":{},\"grouping\":\"{}\",\"reason\":\"{}\",\"adopted\":{},"
                     "\"predicted_before\":{:.1f},\"predicted_after\":{:.1f},\"cost_ms\":{:.3f}}}",
                     l.step, l.grouping, l.reason, l.adopted, l.predicted_before, l.predicted_after, l.cost_ms);
}

namespace {
std::string times_json(const GroupTimesLine& t) {
  return fmt::format("{{\"step_ms\":{:.3f},\"exchange_ms\":{:.3f},\"held_ms\":{:.3f},\"cycle_ms\":{:.3f},"
                     "\"samples_per_sec\":{:.1f},\"staleness\":{:.3f}}}",
                     t.step_ms, t.exchange_ms, t.held_ms, t.cycle_ms, t.samples_per_sec, t.staleness);
}
}  // namespace

std::string json_line(const PhaseGroupsLine& l) {
  std::string groups;
  for (const PhaseGroupsLine::Group& g : l.groups)
    groups += fmt::format("{}{{\"members\":[{}],\"predicted\":{},\"measured\":{}}}", groups.empty() ? "" : ",",
                          fmt::join(g.members, ","), times_json(g.predicted), times_json(g.measured));
  return fmt::format("{{\"kind\":\"groups\",\"step\":{},\"grouping\":\"{}\",\"predicted_samples_per_sec\":{:.1f},"
                     "\"measured_samples_per_sec\":{:.1f},\"groups\":[{}]}}",
                     l.step, l.grouping, l.predicted_samples_per_sec, l.measured_samples_per_sec, groups);
}

std::string group_fields(int group, double staleness, double held_ms, double exchange_ms) {
  return fmt::format(",\"group\":{},\"staleness\":{},\"held_ms\":{:.3f},\"exchange_ms\":{:.3f}", group, staleness,
                     held_ms, exchange_ms);
}

}  // namespace dp
