// Strategy "pipeline"'s own metrics.jsonl line (serialised here, written through StepSink::record): at
// each pause, the plan's predictions beside what the mini-batches since the last pause measured.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dp {

// Strategy "pipeline", at each pause: the plan's predictions beside the measurements of the mini-batches
// since the last pause (medians over its full mini-batches; a stage's slowest replica).
struct PipelineLine {
  int64_t step = 0, minibatches = 0;
  double predicted_minibatch_ms = 0, measured_minibatch_ms = 0;
  double predicted_bubble = 0, measured_bubble = 0;  // 1 - the stages' mean busy fraction
  struct StageLine {
    int stage = 0, first = 0, last = 0;
    std::vector<int> ranks, recompute;
    double predicted_compute_ms = 0, measured_compute_ms = 0;  // per mini-batch: forward, backward, recompute
    double measured_wait_ms = 0;                                // per mini-batch: the bubble
    std::vector<double> predicted_peak_bytes, measured_peak_bytes;  // per rank of the stage
    // Per rank of the stage: compute ms per sample, the median measured and what the plan expects at its
    // machine's described speed (empty: not known; lib/train/pipeline_records.h).
    std::vector<double> measured_ms_per_sample, expected_ms_per_sample;
  };
  std::vector<StageLine> stages;
};

// Its JSON object, without "t".
std::string json_line(const PipelineLine& l);

}  // namespace dp
