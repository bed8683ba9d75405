// The plan strategy "cgp-pipeline" (CGP whose groups are pipelines) trains with, and the model of its
// groups together that chooses it: the run (lib/train/hybrid) makes the choice on the speeds its ranks
// measure, `dptrain estimate`, `plan --compare` and the simulator (lib/estimate, lib/sim) on the
// described or profiled cluster, through the same function.
//
// Every group runs the same stages, placed alike on its ranks; group g's mini-batch (its share B of the
// global batch) takes T_g, the plan evaluated on its devices and links (lib/pipeline's model) and played
// through its 1F1B schedule; every E = exchange_every mini-batches it exchanges with the stages' shards
// (each on group 0's first rank of its stage): the leading stage's members first (each its slice of the
// stage's update up and the global slice back, over its link to the shard's host), then every other
// stage's at once, so X_g = the leading stage's slowest member + the slowest member of the others. A
// cycle is E T_g + W_g + X_g, W_g the wait for the leading shard, which takes one group's exchange at a
// time (cgp::detail::queued_waits); the hold then keeps any group from seeing more than max_staleness
// updates of the others in its cycle (cgp::detail::held_rates). The groups add up: samples/s =
// sum_g E B r_g, r_g their rates; the staleness of g's update is cycle_g x sum_{h != g} r_h.
//
// The plan: the pipeline planner's for group 0's devices (lib/measure/pipeline_plan.h) is the fastest
// pipeline for one group alone, but a group's exchange goes through its stages' shards, so how the model
// is cut decides how the exchanges queue at the leading shard. Without [parallel.pipeline] stages and
// with more than one group, the planner's plan and its cuts at every stage count (pipeline::
// stage_count_plan on group 0's devices) are priced for the groups together, and the most samples/s wins.
// A plan that leaves the run's rank 0 out (the leading shard's host) is never chosen while a cut fits,
// with one group too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/cluster/cluster.h"
#include "lib/job/job.h"
#include "lib/measure/pipeline_plan.h"
#include "lib/pipeline/plan.h"
#include "lib/pipeline/profile.h"

namespace dp {

// One group under a plan: its members (in the order the plan's stage ranks index), the plan evaluated on
// its devices and links, and its exchange: the leading stage's (`lead_s`), then the others' at once
// (`others_s`). A group alone exchanges nothing.
struct HybridGroup {
  std::vector<int> members;
  pipeline::Prediction prediction;
  double lead_s = 0, others_s = 0;
};

// The groups together (the model above); per group, in the grouping's order.
struct HybridRates {
  std::vector<double> minibatch_s, exchange_s, cycle_s, rate;  // cycle_s: with the wait at the leading shard
  double samples_per_s = 0, staleness = 0;
  size_t slowest = 0;  // the group of the longest cycle
};

struct HybridChoice {
  PipelineChoice pipeline;            // the plan every group runs; `how` says how it was chosen
  std::vector<int> grouping;          // cgp::pipeline_groups(job)
  std::vector<HybridGroup> groups;
  int leading = 0;                    // the stage of the run's rank 0, whose shard leads
  int64_t group_batch = 0, exchange_every = 1;
  HybridRates rates;                  // samples_per_s 0 where the workload has no times
};

// The groups of `grouping` running `plan` on cluster `c` (every rank of the job), the workload `w`.
std::vector<HybridGroup> hybrid_groups(const pipeline::Workload& w, const Cluster& c, const std::vector<int>& grouping,
                                       const pipeline::Plan& plan, int leading);
// Their rates, exchanging every `exchange_every` mini-batches of `group_batch` samples under the hold at
// `max_staleness`.
HybridRates hybrid_rates(const std::vector<HybridGroup>& groups, int64_t micro_batches, int64_t group_batch,
                         int64_t exchange_every, double max_staleness);

// The plan of `job` (strategy "cgp-pipeline") from the layer profile `profile` on cluster `c` (every rank
// of the job, speeds relative to the profile's device), its groups and their rates. Throws as
// choose_pipeline_plan does when nothing fits group 0's devices.
HybridChoice choose_hybrid_plan(const Job& job, const pipeline::BlockProfile& profile, const Cluster& c);

}  // namespace dp
