// The plan a pipeline run trains with ([parallel] strategy = "pipeline", [parallel.pipeline]): the
// planner's (lib/pipeline) on the job's cluster from a layer profile of the job's model (a file, or the
// blocks timed when the run starts), or the job's own stages evaluated under the same model; with the
// recomputation the job asks for. `dptrain plan` shows the same plan the run would train with.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/cluster/cluster.h"
#include "lib/job/job.h"
#include "lib/pipeline/plan.h"
#include "lib/pipeline/profile.h"
#include "models/model.h"
#include "models/model_shape.h"

namespace dp {

// M's candidates: `fixed` when > 0, else every divisor of the global batch up to 64.
std::vector<int64_t> micro_batch_candidates(int64_t global_batch, int64_t fixed);
// Resident bytes per parameter byte: weights and gradients, plus SGD's momentum or AdamW's two moments.
double resident_bytes_per_param_byte(const OptimSection& o);
// Of those, the optimizer state's when a stage's replicas shard it (MRA's sharded update), else 0.
double sharded_bytes_per_param_byte(const Job& job);

// The cluster a pipeline is planned on: [cluster] with every rank's speed divided by its persistent
// [cluster.emulate] slowdown (the speeds the ranks will train at), and its memory the emulated memory
// ([cluster.emulate] memory_gb) where given, for a profile of a device of speed 1.
Cluster pipeline_cluster(const Job& job);
// The same for a profile of the job's model timed on this machine: speeds relative to the rank this
// machine stands for (the fastest under [cluster.emulate] as_described, whose device the others are
// emulated relative to; else rank 0).
Cluster profiled_cluster(const Job& job);
// The same with the speeds every rank measured at once (forward and backward of the whole model on
// `local_batch[r]` samples took `step_ms[r]`, emulated slowness included), relative to the device of
// the workload's times: what a run plans with.
Cluster measured_cluster(const Job& job, const pipeline::Workload& w, const std::vector<double>& step_ms,
                         const std::vector<int64_t>& local_batch);

// The layer profile the run plans from: [parallel.pipeline] profile (a dptrain layer profile of this
// model), or the model's blocks timed now on the job's device at a micro-batch of a quarter of the global
// batch per rank (at least 8 samples). Throws ProfileError for a profile of another model.
pipeline::BlockProfile job_layer_profile(const Job& job, const ModelShape& model);
pipeline::BlockProfile job_layer_profile(const Job& job, const Model& model);
// The micro-batch the run times its blocks and its ranks' speeds at.
int64_t profile_micro_batch(const Job& job);

// The planner's workload from a layer profile of the job's model (times of the device that timed it),
// the global batch, M's candidates and the optimizer's resident bytes.
pipeline::Workload job_pipeline_workload(const Job& job, const pipeline::BlockProfile& p);

// What to do when no pipeline fits c, as a hint: the smallest pipeline on devices like c's rank with the
// most memory (its speed; linked as its ranks 0 and 1 are, or at 100 Gbit/s for a cluster of one rank):
// its device count and plan (pipeline::smallest_pipeline), else that more memory is needed.
std::string smallest_pipeline_hint(const pipeline::Workload& w, const Cluster& c, uint64_t seed);

// A group of strategy "cgp-pipeline" as a pipeline job of its own: `group_size` ranks, its share of the
// global batch (in proportion to its ranks). Its stages are planned with it.
Job pipeline_group_job(const Job& job, int group_size);

struct PipelineChoice {
  pipeline::PlanResult result;        // the plan and its prediction
  pipeline::Workload workload;
  std::string how;                    // "the planner's (exact)", "[parallel.pipeline] stages"
  std::vector<std::string> warnings;  // a stage predicted over its device's memory (recompute none/all)
};
// `plan` with the recomputation [parallel.pipeline] recompute asks for ("auto": each stage's cheapest
// set that fits, pipeline::finish_plan), its prediction and `method`.
pipeline::PlanResult with_job_recompute(const Job& job, const pipeline::Workload& w, const Cluster& c,
                                        pipeline::Plan plan, const std::string& method);
// [parallel.pipeline] stages at its best candidate M, or the planner's plan; recomputation as
// [parallel.pipeline] recompute says ("auto": each stage's cheapest set that fits). Throws InputError
// naming the job's key when the stages do not fit the model or cluster, or (recompute "auto") nothing
// fits memory: which stage and what would.
PipelineChoice choose_pipeline_plan(const Job& job, const pipeline::Workload& w, const Cluster& c);

// Before ranks start: the stages string against the model's blocks and the cluster, the profile file
// against the model, a tied LM head, a GPU device; with memory limits in [cluster], that a plan fits
// (timing the blocks when the job gives no profile). Throws InputError (exit status 2).
void check_pipeline_job(const Job& job, const ModelShape& model);
void check_pipeline_job(const Job& job, const Model& model);

}  // namespace dp
