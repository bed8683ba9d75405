// What the ranks of a pipeline run tell each other after every mini-batch, and the pipeline line rank 0
// writes at every pause (metrics.jsonl): the plan's predictions beside the medians measured since the
// last pause, stage by stage, and every rank's compute per sample as its machine's described speed
// makes the plan expect it beside what it measured (pipeline_strategy.cpp); the monitor names a slow
// machine by the ratio of the two.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "lib/job/job.h"
#include "lib/pipeline/plan.h"
#include "lib/train/pipeline/pipeline_lines.h"
#include "lib/train/step/sync_step.h"  // RankRecord: a rank's mini-batch, as every rank hears of it

namespace dp::pipeline_detail {

// Every rank's speed as [cluster] describes it, relative to the device the workload's times are of: the
// rank this machine stands for when the blocks were timed here (the fastest under [cluster.emulate]
// as_described, else rank 0), or a device of speed 1 for a profile file. Emulated slowdowns and the
// speeds measured at the start are not in it: they are what a slow machine shows against it.
std::vector<double> described_speeds(const Job& job);

// On --resume: c with the speeds a checkpoint's replicas divided their micro-batches by (its
// balance_weights, one per rank), scaled to c's total, so that they divide them as before and the run
// continues bit for bit; none when the checkpoint has none for this many ranks (another rank count, or
// written by a strategy without them). A data run's I-DAT proportions count: they are speeds too.
std::optional<Cluster> with_resumed_speeds(const Cluster& c, const std::vector<double>& speeds);

// The compute milliseconds per sample the plan expects of every rank (index: rank; 0 for a rank the plan
// leaves out) at `speeds`: its stage's forward, backward and recomputed forwards per sample, and the
// fixed part of each micro-batch over its rows of one.
std::vector<double> expected_compute_ms_per_sample(const pipeline::Plan& plan, const pipeline::Prediction& prediction,
                                                   const pipeline::Workload& w, const std::vector<double>& speeds);

// The line for the mini-batches `records` (every rank's record of each full mini-batch of the phase,
// `step_ms` their times) ending after step `step`; `prediction` null when rank 0 made none; `peaks`
// every rank's stage peak bytes; `expected_ms_per_sample` expected_compute_ms_per_sample's (empty: none).
PipelineLine phase_line(const pipeline::Plan& plan, int64_t micro_batches, const pipeline::Prediction* prediction,
                        int64_t step, const std::vector<double>& step_ms,
                        const std::vector<std::vector<RankRecord>>& records, const std::vector<double>& peaks,
                        const std::vector<double>& expected_ms_per_sample = {});

}  // namespace dp::pipeline_detail
