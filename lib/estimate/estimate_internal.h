// Shared by the estimate's strategies (estimate.cpp: data parallel and the assembly; strategies.cpp:
// CGP and pipeline): block times from a layer profile, and per-rank results.
#pragma once

#include <string>
#include <vector>

#include "lib/estimate/estimate.h"

namespace dp::estimate::detail {

// Seconds of forward + backward of blocks [first, last] over n samples on a device of speed 1 (the
// profile's per-micro-batch fixed parts paid once), and of the optimizer's update of their parameters.
double blocks_seconds(const pipeline::BlockProfile& p, int first, int last, double n);
double update_seconds(const pipeline::BlockProfile& p, int first, int last);
// What a replica's step of n samples in `parts` micro-batches takes besides its blocks (the profile's
// step_extra_ms, its fixed part paid per micro-batch).
double step_extra_seconds(const pipeline::BlockProfile& p, double n, double parts);

// The samples each of `speeds.size()` ranks takes of `batch`: in proportion to speed (I-DAT) or equal.
std::vector<int64_t> shares_of(int64_t batch, const std::vector<double>& speeds, bool by_speed);

// Seconds the gradient exchange of `bytes` over `ranks` adds after backward under [parallel.comm]
// (plain: a whole allreduce; MRA: what its overlap with backward leaves over).
double sync_tail_seconds(const Job& job, const Cluster& c, const std::vector<int>& ranks, double bytes);

// What a data-parallel step over `ranks` adds after its slowest rank's compute: the gradient exchange
// (sync_tail_seconds of the whole model's gradients) and the optimizer's update, divided among MRA's
// shards when its update is sharded.
struct DataStepTail {
  double comm_s = 0, update_s = 0;
};
DataStepTail data_step_tail(const Job& job, const ModelFacts& facts, const Cluster& c, const std::vector<int>& ranks,
                            const pipeline::BlockProfile& p);

// Data-parallel ranks `ranks` sharing `batch` per step (one CGP group, or the whole job).
void data_parallel_ranks(const Job& job, const ModelFacts& facts, const Cluster& c, const Timing& t,
                         const std::vector<int>& ranks, int64_t batch, const std::string& role,
                         std::vector<RankEstimate>& out, double& step_s);

// What a replica of `param_bytes` of parameters (among `replicas`) holds besides its buffers while it
// writes a checkpoint: its piece's optimizer state (none for a lone replica).
double checkpoint_piece_bytes(const Job& job, double param_bytes, int replicas);
// The ranks of `plan`'s stages (a stage's rank i is the cluster's rank_of[i]), each as the planner's
// memory model and `pred` say (times only when `timed`), `role` before each one's role.
void stage_ranks(const Job& job, const ModelFacts& facts, const pipeline::Workload& w, const pipeline::Plan& plan,
                 const pipeline::Prediction& pred, bool timed, const std::vector<int>& rank_of, const std::string& role,
                 std::vector<RankEstimate>& out);
void cgp_ranks(const Job& job, const ModelFacts& facts, const Cluster& c, const Timing& t, Estimate& e);
void pipeline_ranks(const Job& job, const ModelFacts& facts, const Cluster& c, const Timing& t, Estimate& e);
void cgp_pipeline_ranks(const Job& job, const ModelFacts& facts, const Cluster& c, const Timing& t, Estimate& e);
// The job's strategy's ranks and step time on `c` (one of the four above).
void strategy_ranks(const Job& job, const ModelFacts& facts, const Cluster& c, const Timing& t, Estimate& e);

// [cluster.emulate]'s fluctuation window (fluctuation.cpp): `c` as a run of `steps` steps sees it at its
// start (the rank slowed at step 0, if any), and the step time averaged over the job's steps with the
// decisions made at the start kept.
Cluster cluster_at_start(const Job& job, const Cluster& c, int64_t steps);
void average_over_fluctuation(const Job& job, const ModelFacts& facts, const Cluster& c, const Timing& t,
                              Estimate& e);

}  // namespace dp::estimate::detail
