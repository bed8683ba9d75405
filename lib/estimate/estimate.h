// Resource estimation (`dptrain estimate`): what a job needs on every device before it runs. Per rank,
// for the job's strategy (data parallel, plain or MRA with its sharded optimizer state, with equal or
// I-DAT shares; CGP groups and the parameter server; pipeline stages with their micro-batches in flight
// and recomputation): parameter, gradient, optimizer-state, activation and workspace bytes, the
// process's resident size, FLOPs, the predicted step time and from it the time of an epoch and of the
// job; the fewest devices of a kind the job fits on; and the request a scheduler needs.
//
// The memory terms are those of the buffers the run allocates (every one of them charges the process's
// memory meter, which `dptrain run` records as allocated_peak_bytes in summary.json), computed from the
// model's block shapes (models/block.h) without allocating activations. Times come from a layer profile
// (dptrain profile --layers, or the blocks timed here) on the job's cluster speeds, or from a device's
// peak rates (a roofline: a lower bound). Pure functions of their arguments but for model_facts().
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lib/cluster/cluster.h"
#include "lib/job/job.h"
#include "lib/measure/hybrid_plan.h"
#include "lib/pipeline/plan.h"
#include "lib/pipeline/profile.h"
#include "models/block.h"

namespace dp::estimate {

// A device kind by name (--device h200) with its memory and peak rates, or given by numbers.
struct DeviceKind {
  std::string name;
  double memory_gb = 0;            // device memory
  double peak_tflops = 0;          // dense fp32 (CPU, or a GPU's fp32 path)
  double peak_tflops_bf16 = 0;     // dense bf16 tensor cores (GPUs; 0: as fp32)
  double memory_gbps = 0;          // memory bandwidth, GB/s
};
std::vector<DeviceKind> known_devices();
// The kind named `name`, in any case ("H200" is "h200"; the kind's name is the table's, lower case).
// Throws UsageError (where: `where`) for an unknown name, listing the known ones.
DeviceKind device_kind(const std::string& name, const std::string& where);

// The job with every rank's device memory `gb` (each rank's, and each [cluster] kind's): a device kind
// named for sizing (--device) is every rank's.
Job with_device_memory(Job job, double gb);

struct ModelFacts;
// A layer profile of the model's sizes (as `profile --layers` writes them) with no times.
pipeline::BlockProfile shape_profile(const ModelFacts& facts, int64_t micro_batch);
// The same with each block's times at device `d`'s peak rates (a roofline: a lower bound).
pipeline::BlockProfile roofline_profile(const ModelFacts& facts, const DeviceKind& d, bool bf16, int64_t micro_batch);

// What the estimate needs of the job's model and data (model_facts() reads the model's shape without
// building it: models/model_shape.h).
struct ModelFacts {
  std::string describe;            // "mlp: 784-256-128-10, 235,146 parameters"
  std::vector<BlockShape> blocks;  // in running order
  int64_t parameters = 0;
  int64_t input_floats = 0;        // per sample: the data (0 for text)
  int64_t input_tokens = 0;        // per sample: token ids (text)
  int64_t targets_per_sample = 1;
  int64_t train_samples = 0, test_samples = 0;
  int64_t eval_chunk = 0;          // samples rank 0 evaluates at once (lib/train/run_setup.cpp; [train]
                                   //   micro_batch caps it)
  double dataset_bytes = 0;        // what every rank holds of the data set in memory
  double fixed_bytes = 0;          // the model's buffers besides parameters, gradients and activations
                                   //   (a CNN's convolution workspace, a head's constant vectors)
  bool shared_head = false;        // a tied LM head: the pipeline keeps it with the embedding
  double forward_flops() const;    // per sample
  double backward_flops() const;
};
ModelFacts model_facts(const Job& job);

struct MemoryTerms {  // bytes on one device
  double params = 0, grads = 0, optimizer = 0, activations = 0, workspace = 0;
  // What the runtime holds besides, at the rank's peak: a CGP rank's whole-model copy (evaluation,
  // checkpoints), the model or blocks its speed probe times before training, the model's fixed buffers
  // beside a pipeline stage, and a checkpoint's piece of optimizer state (checkpoint_shards.h).
  double other = 0;
  double total() const { return params + grads + optimizer + activations + workspace + other; }
};

struct RankEstimate {
  int rank = 0;
  std::string role;              // "data", "group 1", "stage 0 (blocks 0-3)", "+ server"
  int64_t samples = 0;           // per step (a stage: per micro-batch)
  MemoryTerms memory;            // the buffers the run allocates (the device's memory on a GPU)
  double host_bytes = 0;         // host memory besides: the data set, a server's copies of the model
  double resident_bytes = 0;     // the process's peak resident size (CPU ranks: buffers included)
  double memory_limit_bytes = 0; // [cluster] memory of its device (0: unknown)
  bool fits = true;
  double compute_s = 0, comm_s = 0, update_s = 0;  // of one step, predicted (0 without times)
};

// Where step times come from.
struct Timing {
  std::string basis;                              // for the report: "profile FILE", "blocks timed here", ...
  std::optional<pipeline::BlockProfile> profile;  // per-block times of a device of speed 1 (none: memory only)
};

// The request a scheduler needs (Slurm's sbatch, a Kubernetes MPIJob).
struct ResourceRequest {
  int64_t ranks = 1, nodes = 1, ranks_per_node = 1;
  int64_t cpus_per_rank = 1;
  int64_t memory_per_rank_bytes = 0;  // the largest rank's resident estimate plus headroom
  int64_t gpus_per_rank = 0;
  double time_limit_s = 0;            // the job's predicted time plus headroom (0: no times)
};

struct Fit {
  std::string device;        // the kind
  int64_t devices = 0;       // the fewest on which every rank fits (0: none up to the limit searched)
  double peak_bytes = 0;     // the largest rank's buffers there
  std::string note;          // how (data parallel shards, pipeline stages) or why not
  // When the job's strategy is not a pipeline and needs more devices than the job has (or fits on none):
  // the smallest pipeline of the kind (fewest devices, then the most samples/s; 0: none fits) and its plan.
  int64_t pipeline_devices = 0;
  std::string pipeline_note;
};

struct Estimate {
  std::string strategy;            // "data (mra, idat)", "cgp (2 groups)", "pipeline (3 stages, M=8)"
  std::string model;
  std::vector<RankEstimate> ranks;
  double flops_per_sample = 0;     // forward + backward
  double flops_per_step = 0;
  double step_s = 0;               // predicted (0: no timing basis)
  // The step's split on the rank that bounds it (0: not split, as CGP's): compute, communication after
  // or between compute, the pipeline's bubble (waiting on other stages), the optimizer's update; and the
  // largest of them by name ("compute", "communication", "bubble", "update").
  double compute_s = 0, comm_s = 0, bubble_s = 0, update_s = 0;
  std::string bound;
  double samples_per_s = 0;
  double staleness = 0;            // CGP: the model's largest staleness over the groups (updates landing
                                   //   between a group's read and its write); 0 for synchronous strategies
  double server_load = 0;          // CGP: offered load on the global model's server (> 1: saturated)
  int64_t steps_per_epoch = 0, total_steps = 0;
  double eval_s = 0;               // one evaluation of the test set on rank 0
  double epoch_s = 0, job_s = 0;
  std::string timing_basis;
  std::vector<std::string> notes;  // what the estimate leaves out or assumed
  // What was priced, for a simulator to replay (lib/sim/job.h): CGP's grouping (normalized), a
  // pipeline's plan with the planner's prediction.
  std::vector<int> cgp_grouping;
  std::optional<pipeline::PlanResult> pipeline_plan;
  ResourceRequest request;
  std::optional<Fit> fit;
};

struct Options {
  double baseline_resident_bytes = 0;  // a rank's resident size before data and buffers (measured)
  bool gpu = false;                    // ranks train on GPUs: buffers are device memory, not resident
  std::optional<DeviceKind> fit_device;  // also search the fewest of these that fit
  double memory_headroom = 0.2, time_headroom = 0.5;
};

// The estimate of `job` on `cluster` (pipeline_cluster(job): [cluster] speeds under their emulated
// slowdown). Throws InputError when the strategy's plan cannot be made (a pipeline that cannot fit).
Estimate estimate_job(const Job& job, const ModelFacts& facts, const Cluster& cluster, const Timing& timing,
                      const Options& options);

// Buffers of one data-parallel rank (the whole model, Model::run_blocks) training `samples` per step (in
// micro-batches of [train] micro_batch, recomputing as [train] recompute says) and evaluating
// `eval_samples` at once (rank 0), its optimizer holding state for `state_params` parameters.
MemoryTerms data_parallel_memory(const Job& job, const ModelFacts& facts, int64_t samples, int64_t eval_samples,
                                 int64_t state_params);

// The fewest devices of kind `d` (speed 1, its memory) on which every rank of the job's strategy fits
// (doubling, then bisecting, up to 4096; a pipeline from the planner's smallest pipeline up), and when
// that is more than the job's ranks, the smallest pipeline that fits.
Fit fewest_devices(const Job& job, const ModelFacts& facts, const Timing& t, const DeviceKind& d);

// CGP's compute time: seconds per sample at speed 1 ([cluster] sample_rate when the job gives one, as the
// run groups with it; else an equal share of the global batch timed by `t`'s profile, its per-micro-batch
// fixed times spread over the share). Every CGP prediction (estimate, plan, plan --compare) reads this.
double cgp_sample_seconds(const Job& job, const ModelFacts& facts, const Cluster& c, const Timing& t);

// The model's pieces a simulator replays (lib/sim): a data-parallel rank's forward and backward of n
// samples at speed 1 (in [train] micro_batch parts, recomputing as [train] recompute says), the
// exchange after backward, and the optimizer's update of the whole model at speed 1.
double replica_compute_seconds(const Job& job, const ModelFacts& facts, const pipeline::BlockProfile& p, double n);
// What the gradient exchange of `bytes` adds after backward under `comm`, a ring allreduce of b bytes
// taking ring(b) seconds: plain, the whole allreduce; MRA overlapping backward, its last bucket's
// reduce-scatter and, unless it runs into the next forward, the all-gather.
double sync_tail_seconds(const CommSection& comm, double bytes, const std::function<double(double)>& ring);
double model_update_seconds(const ModelFacts& facts, const pipeline::BlockProfile& p);
// A pipeline estimate's plan priced on `cluster` as it is, keeping the rows its replicated stages
// divided at the run's start: the estimate plans on the cluster a run sees at step 0, which
// [cluster.emulate]'s fluctuation window may have slowed, while a simulator plays that window itself.
// Requires `t.profile` and `e` from estimate_job of a pipeline job on `cluster`.
pipeline::Prediction pipeline_on_cluster(const Job& job, const Cluster& cluster, const Timing& t, const Estimate& e);

// CGP of pipelines' terms (strategy "cgp-pipeline"), which its estimate and the simulator both read:
// the plan the run would train with, its groups and their rates (lib/measure/hybrid_plan.h), chosen on
// `c` and `t`'s step times (the model's shapes alone without a profile: no rates).
using HybridTerms = HybridChoice;
HybridTerms hybrid_terms(const Job& job, const ModelFacts& facts, const Cluster& c, const Timing& t);

std::string estimate_text(const Estimate& e);
std::string estimate_json(const Estimate& e);

}  // namespace dp::estimate
