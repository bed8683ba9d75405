// What the ranks of a pipeline run tell each other after every mini-batch, and the pipeline line rank 0
// writes at every pause (metrics.jsonl): the plan's predictions beside the medians measured since the
// last pause, stage by stage (pipeline_strategy.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "lib/pipeline/plan.h"
#include "lib/train/metrics.h"

namespace dp::pipeline_detail {

// One rank's mini-batch, as every rank hears of it (one allgather per mini-batch).
struct RankRecord {
  double loss_sum = 0;  // of the loss terms its stage computed (the last stage's replicas)
  StepTimes times;
  int32_t stage = -1;
  int32_t stop_signal = 0;  // its pending stop request
};

// The line for the mini-batches `records` (every rank's record of each full mini-batch of the phase,
// `step_ms` their times) ending after step `step`; `prediction` null when rank 0 made none; `peaks`
// every rank's stage peak bytes.
PipelineLine phase_line(const pipeline::Plan& plan, int64_t micro_batches, const pipeline::Prediction* prediction,
                        int64_t step, const std::vector<double>& step_ms,
                        const std::vector<std::vector<RankRecord>>& records, const std::vector<double>& peaks);

}  // namespace dp::pipeline_detail
