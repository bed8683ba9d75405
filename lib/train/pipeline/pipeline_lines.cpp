// The JSON of strategy "pipeline"'s metrics line (see pipeline_lines.h).
#include "lib/train/pipeline/pipeline_lines.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace dp {

std::string json_line(const PipelineLine& l) {
  std::string stages;
  for (const PipelineLine::StageLine& s : l.stages)
    stages += fmt::format(
        "{}{{\"stage\":{},\"blocks\":[{},{}],\"ranks\":[{}],\"recompute\":[{}],"
        "\"predicted\":{{\"compute_ms\":{:.3f},\"peak_bytes\":[{:.0f}]}},"
        "\"measured\":{{\"compute_ms\":{:.3f},\"wait_ms\":{:.3f},\"peak_bytes\":[{:.0f}],"
        "\"compute_ms_per_sample\":[{:.5f}]}}{}}}",
        stages.empty() ? "" : ",", s.stage, s.first, s.last, fmt::join(s.ranks, ","), fmt::join(s.recompute, ","),
        s.predicted_compute_ms, fmt::join(s.predicted_peak_bytes, ","), s.measured_compute_ms, s.measured_wait_ms,
        fmt::join(s.measured_peak_bytes, ","), fmt::join(s.measured_ms_per_sample, ","),
        s.expected_ms_per_sample.empty()
            ? std::string()
            : fmt::format(",\"expected\":{{\"compute_ms_per_sample\":[{:.5f}]}}", fmt::join(s.expected_ms_per_sample, ",")));
  return fmt::format("{{\"kind\":\"pipeline\",\"step\":{},\"minibatches\":{},\"predicted\":{{\"minibatch_ms\":{:.3f},"
                     "\"bubble\":{:.4f}}},\"measured\":{{\"minibatch_ms\":{:.3f},\"bubble\":{:.4f}}},\"stages\":[{}]}}",
                     l.step, l.minibatches, l.predicted_minibatch_ms, l.predicted_bubble, l.measured_minibatch_ms,
                     l.measured_bubble, stages);
}

}  // namespace dp
