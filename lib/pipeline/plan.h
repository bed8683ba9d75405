// The pipeline planner: how to cut a model (an ordered list of blocks) into stages, which devices run
// each stage (several devices: data parallel inside the stage, each taking a share of every
// micro-batch in proportion to its speed), how many micro-batches a mini-batch is cut into, and which
// blocks of each stage recompute their activations so that every device fits its memory, together, for
// 1F1B with a flush per mini-batch (synchronous: the same mathematics as one process).
//
// Cost model (man dptrain(1), PIPELINE MODEL, has it with every term): the resources of a pipeline are its
// stages and the links between adjacent stages; a micro-batch costs each stage its forward, backward and
// recomputed forward (slowest replica), and each link the activations forward plus their gradients back.
// A mini-batch of M micro-batches takes
//     T = sum over resources of t_r + (M - 1) * max over resources of t_r + allreduce tail,
// the fill and drain of the pipeline plus M - 1 micro-batches through its bottleneck; a replicated stage
// reduces its gradients (ring allreduce over its devices) once its last backward is done, and every stage
// then updates its parameters, while the stages before it still drain, and only what sticks out of that
// drain adds to T. Memory per device:
// parameters, gradients and optimizer state, activations kept for min(M, stages after it + 1)
// micro-batches in flight (a recomputed block keeps only its input), the largest block's working memory
// (the blocks share one) and what the largest recomputed block rebuilds, and the gradient buffers (to
// and from the neighbours, and between the stage's blocks): what a stage's buffers hold (tested). With equal devices, one bandwidth, no latencies and M -> infinity,
// T / M is PipeDream's objective for a straight pipeline (the slowest stage or link).
//
// Planners, under one deadline (PlanOptions::seconds, 5 s) and budgets of steps that make them
// deterministic (select.cpp): first an exact program over the whole cluster where its estimated work fits
// its budget: for identical devices a dynamic program over block ranges and runs of devices
// (homogeneous.cpp: stages on consecutive runs of a locality order; exact over every plan when the links
// are all equal), else the subset search (exact.cpp: block ranges, device sets and positions, keeping the
// Pareto set of (sum, max, allreduce tail) per state; up to 20 devices, interchangeable ones tried once).
// Beyond, a heuristic (heuristic.cpp: stages on runs of a locality order, blocks cut by a bisection on the
// bottleneck, then iterated local search over boundaries and devices) started from seeds it never returns
// anything slower than: the naive plan, data parallelism, the best plan with each stage count, the best
// PipeDream-style plan (baselines.cpp), its own plan on the fastest power-of-two subset below the device
// count (down to 8, where the exact programs are affordable: so it is monotone in devices), and the
// identical devices' program on each large device kind. Recomputation is chosen per stage: the blocks
// whose recomputation costs least while the stage fits, which is exact because T only grows with a
// stage's time (recompute.cpp). The smallest pipeline that fits (smallest.cpp) builds on them.
// Pure functions of the block table and a Cluster (lib/cluster): no MPI, no clocks but time limits.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lib/cluster/cluster.h"
#include "lib/pipeline/profile.h"

namespace dp::pipeline {

// One block's costs per training sample, and per micro-batch a device runs it whatever its share (the
// fixed part: loops' and kernels' set-up, which small micro-batches pay again and again). Times on a
// device of speed 1: a device running n samples of it takes (n * forward_s + forward_fixed_s) / speed.
struct BlockCost {
  std::string name;
  double forward_s = 0, backward_s = 0;
  double output_bytes = 0;  // the tensor crossing the boundary after this block (its gradient goes back)
  double saved_bytes = 0;   // kept from forward to backward: its input and what its backward reads besides
  double work_bytes = 0;    // transient memory of its forward or backward (freed after)
  double param_bytes = 0;   // bytes of its parameters (the block's total, not per sample)
  double forward_fixed_s = 0, backward_fixed_s = 0;  // per micro-batch
  double update_s = 0;      // the optimizer's update of its parameters, once per mini-batch (a replica
                            //   under a sharded update does 1/replicas of it)
};

struct Workload {
  std::vector<BlockCost> blocks;
  double input_bytes = 0;            // per sample: the input of block 0 (the data)
  int64_t global_batch = 0;          // samples of one mini-batch (one optimizer step)
  std::vector<int64_t> micro_batch_counts;  // candidates for M, each dividing global_batch
  double state_per_param_byte = 3;   // resident bytes per parameter byte: weights, gradients, optimizer
                                     //   state (SGD with momentum: 3; Adam: 4)
  double sharded_per_param_byte = 0; // of those, the optimizer state's, when the replicas of a stage
                                     //   shard it (MRA's sharded update: each keeps 1/replicas of it)
  bool may_recompute = true;         // false: the planners fit every stage without recomputation
  // At a checkpoint each replica of a replicated stage gathers its piece of the optimizer state
  // (lib/train/checkpoint_shards.h): this many bytes per parameter byte of the stage, over its replicas
  // (the optimizer's state slots; 0: no checkpoints). A lone replica writes what it keeps, in place.
  double checkpoint_per_param_byte = 0;
  // The input bytes of block b (what a recomputed block keeps): the boundary before it.
  double input_bytes_of(int b) const { return b == 0 ? input_bytes : blocks[size_t(b) - 1].output_bytes; }
  // Resident bytes per parameter byte on each device of a stage of `replicas` devices (its checkpoint
  // piece included: held beside the rest, in the buffers a run keeps).
  double state_bytes_per_param_byte(size_t replicas) const {
    return state_per_param_byte - (replicas > 1 ? sharded_per_param_byte * (1 - 1.0 / double(replicas)) : 0.0) +
           checkpoint_bytes_per_param_byte(replicas);
  }
  // Bytes per parameter byte a device of a stage of `replicas` devices gathers at a checkpoint.
  double checkpoint_bytes_per_param_byte(size_t replicas) const {
    return replicas > 1 ? checkpoint_per_param_byte / double(replicas) : 0.0;
  }
};

// The blocks of a profile whose times and sizes are for minibatches of `profile_batch` samples, per
// sample: each block keeps its output for its backward (what PipeDream's memory model stashes), with no
// working memory beyond it, and no fixed time. global_batch and micro_batch_counts are left to the caller.
Workload workload_from_profile(const LayerProfile& p, double profile_batch);
// The blocks of a dptrain layer profile: its fixed times, and the rest of its times per sample (divided by
// its micro_batch).
Workload workload_from_block_profile(const BlockProfile& p);

struct Stage {
  int first = 0, last = 0;     // blocks [first, last]
  std::vector<int> ranks;      // its devices (ranks of the Cluster, ascending: the order its samples are
                               //   laid out in and its ring runs), data parallel inside the stage
  std::vector<int> recompute;  // blocks that keep only their input and re-run forward before backward
};

struct Plan {
  std::vector<Stage> stages;
  int64_t micro_batches = 1;  // M
};

struct StagePrediction {
  std::vector<int64_t> shares;       // samples of one micro-batch on each device of the stage
  double forward_s = 0;              // per micro-batch, the slowest replica
  double backward_s = 0;             // per micro-batch, recomputation included
  double recompute_s = 0;            // the part of backward_s that re-runs forwards
  double link_s = 0;                 // to the next stage: activations forward + gradients back
  double link_forward_s = 0, link_backward_s = 0;
  double allreduce_s = 0;            // of its gradients, once per mini-batch (0: one device)
  double update_s = 0;               // the optimizer's update after it, its slowest device
  std::vector<double> device_forward_s, device_backward_s, device_update_s;  // per device: its own share
  int64_t in_flight = 0;             // micro-batches whose activations it holds at once
  std::vector<double> peak_bytes;    // per device of the stage
  std::vector<double> memory_bytes;  // per device: its memory (0: unknown, no limit)
  double busy_fraction = 0;          // M * (forward + backward) / T
  bool fits = true;
};

struct Prediction {
  std::vector<StagePrediction> stages;
  double minibatch_s = 0;      // T
  double samples_per_s = 0;    // global_batch / T
  double bottleneck_s = 0;     // the slowest resource, per micro-batch
  double allreduce_tail_s = 0; // what the allreduces and updates add after the pipeline drains
  double bubble_fraction = 0;  // 1 - the stages' mean busy fraction
  bool fits = true;            // every device within its memory
};

// The model's prediction for a plan (its recompute lists as given). Throws InternalError for a plan that
// does not cover the blocks in order or uses a rank twice (callers validate user input first). A
// replicated stage's rows are divided by the speeds of `divided_by` when given (a run keeps the division
// it made at its start while speeds change), else of `c`.
Prediction evaluate(const Workload& w, const Cluster& c, const Plan& plan, const Cluster* divided_by = nullptr);

// The cheapest recomputation for blocks [first, last] on `ranks` at position `from_end` (1: the last
// stage) with M micro-batches: fewest recomputed forward seconds such that every device fits. Returns
// false when nothing fits (then `recompute` holds every block; none when w.may_recompute is false).
bool choose_recompute(const Workload& w, const Cluster& c, int first, int last, const std::vector<int>& ranks,
                      int from_end, int64_t micro_batches, std::vector<int>& recompute);

struct PlanOptions {
  double seconds = 5.0;               // the deadline of the whole planning (every micro-batch count, seed and
                                      //   search); it cuts the searches short, never the baselines' seeds
  int64_t exact_steps = 20000000;     // an exact program's budget of steps over the micro-batch counts
                                      //   (transitions and the entries they extend; deterministic, 10-300 ns
                                      //   each here): when they run out it is not exact, its plan no seed
  int64_t search_candidates = 2000;   // the heuristic's local search: placements tried per micro-batch count
  uint64_t seed = 1;
  bool force_exact = false, force_heuristic = false;
};

struct PlanResult {
  Plan plan;
  Prediction prediction;
  std::string method;  // "exact" | "exact (identical devices)" | "heuristic"
  bool feasible = false;
};

// The plan of least predicted mini-batch time that fits memory, over the candidate micro-batch counts.
// feasible false: nothing fits (plan: the least-time plan with memory ignored, for the explanation).
PlanResult plan_pipeline(const Workload& w, const Cluster& c, const PlanOptions& o = {});
PlanResult plan_exact(const Workload& w, const Cluster& c, int64_t micro_batches);
PlanResult plan_heuristic(const Workload& w, const Cluster& c, int64_t micro_batches, const PlanOptions& o);

// Baselines under the same model, each at its best candidate micro-batch count with the cheapest fitting
// recomputation: `naive` (min(blocks, ranks) stages of equal block counts, ranks in order, one each) and
// `one stage` (every block on every rank: data parallelism as a pipeline of one stage).
PlanResult naive_plan(const Workload& w, const Cluster& c);
PlanResult data_parallel_plan(const Workload& w, const Cluster& c);
// `stages` stages on equal runs of the devices taken fastest first (ties in rank order; d / stages each,
// the first d % stages one more, at most a micro-batch's samples each), the blocks cut so that the
// slowest stage's compute is least (greedy at the least cap; baselines.cpp); and the best PipeDream-style
// plan: blocks [0, j) on the r fastest devices, then single-device stages on the next fastest, each
// taking blocks while within the first stage's compute (one at least), best over j and r. Feasible
// false, no stages: none fits (or none is possible).
PlanResult stage_count_plan(const Workload& w, const Cluster& c, int stages);
PlanResult pipedream_plan(const Workload& w, const Cluster& c);

// A plan's stages with each one's cheapest fitting recomputation, and its prediction (method "given";
// feasible false when a stage cannot fit even recomputing every block).
PlanResult finish_plan(const Workload& w, const Cluster& c, Plan plan);

// A user's stages (recomputation left to finish_plan): "0-16x3,17-39", block ranges in order ("7": one
// block), "xR" for R replicas, ranks taken in rank order; or "0-16@0+1+2,17-39@3-5" naming each stage's
// ranks. Throws UsageError (where: `where`) for ranges that leave blocks out, overlap, or run past the
// last block, a rank named twice or out of range, more devices than the cluster has, and more replicas
// than a micro-batch has samples.
Plan parse_stages(const std::string& text, const Workload& w, const Cluster& c, int64_t micro_batches,
                  const std::string& where);

// A user's stages (parse_stages) at each of w's candidate micro-batch counts, each plan completed by
// `finish` (its recomputation and prediction: finish_plan, or what a job's recompute asks): the fastest
// that fits, else the fastest. Counts parse_stages refuses (micro-batches too small for a stage's
// replicas) are skipped; when it refuses every count, its first UsageError is thrown.
PlanResult best_given_stages(const std::string& text, const Workload& w, const Cluster& c, const std::string& where,
                             const std::function<PlanResult(Plan)>& finish);

// Why nothing fits, as one line: the stage that cannot fit even recomputing every block with one
// micro-batch in flight, by how much, and what would.
std::string explain_infeasible(const Workload& w, const Cluster& c, const PlanResult& best);

// The fewest devices on which a pipeline of w fits, `cluster(d)` giving d devices of one kind (up to
// max_devices), and plan_pipeline's plan on them: fewest devices, then the least mini-batch time. devices
// 0: none fits up to max_devices (smallest.cpp says how it searches).
struct SmallestPipeline {
  int devices = 0;
  PlanResult result;
};
SmallestPipeline smallest_pipeline(const Workload& w, const std::function<Cluster(int)>& cluster, int max_devices,
                                   const PlanOptions& o = {});

}  // namespace dp::pipeline
