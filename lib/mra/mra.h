// Gradient synchronisation and the parameter update of data parallelism, after backward or fused with it.
//
//   plain ("native" | "ring"): after backward, every layer's gradients are summed over the ranks with one
//       allreduce each (the transport's own, or dptrain's ring), then every rank updates all parameters.
//   MRA ("mra", the seed's fused Ring-Allreduce): gradients are grouped into buckets in the order backward
//       produces them (the last layers first; the first bucket smaller so that communication starts
//       early). As soon as backward has finished a bucket it is reduce-scattered, each rank updates its
//       shard of it (optimizer state exists only for that shard), and the updated shard is all-gathered:
//       reduce-scatter, update and all-gather run on a communication thread while backward continues
//       (overlap; a model whose gradients make one bucket has nothing to overlap and runs it after
//       backward, without the thread), so a step ends with only the first layers' bucket in flight. With
//       overlap_forward the updates and all-gathers wait until every bucket is summed and then run first
//       layers first into the next step's forward, whose layers each wait only for their own bucket (the
//       model's parameters-needed hook): the step ends as soon as the sums are done, and the forward,
//       while it waits for parameters, does the updates the next all-gathers need (so the update's CPU
//       work leaves backward, where the CPU is busy, for the forward, where it would idle).
//   Buckets close at the ranges the model's hooks announce; with overlap, wide layers are announced in
//   slices (hook_slice_floats), so communication starts in the middle of a layer, and the last bucket
//   (the first layers, whose sums end the step and whose all-gather starts the next) is small too.
//
// Pure data in, a plan out (plan_buckets), and one object per run that the trainer drives each step:
// begin_step, the model's gradients-ready hook, finish_step. Communication uses a communicator of its own
// (split from the one given), so it never interleaves with the trainer's collectives.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lib/comm/collective_queue.h"
#include "lib/comm/communicator.h"
#include "lib/core/param_range.h"
#include "lib/job/job.h"

namespace dp {

// [parallel.comm] of the job.
struct GradSyncOptions {
  CommAlgorithm algorithm = CommAlgorithm::mra;
  int64_t bucket_bytes = 25'000'000;   // MRA bucket size (fp32 gradients)
  int64_t first_bucket_bytes = 1'000'000;
  bool overlap = true;                 // MRA: communicate on a thread while backward runs
  bool overlap_forward = false;        // MRA with overlap: all-gather into the next step's forward
  bool sharded_update = true;          // MRA: update (and keep optimizer state for) this rank's shard only
};
// The options a job's [parallel.comm] sets.
GradSyncOptions grad_sync_options(const CommSection& comm);

// Buckets over `layers` (the ranges the model's hooks announce, in forward order, together covering
// [0, total)), in the order backward completes them: from the end of the buffer to its start. Ranges are
// not split; a bucket closes once it holds at least its target (first_bucket_bytes for the first,
// bucket_bytes after), and the last (the first ranges) holds about first_bucket_bytes too.
std::vector<ParamRange> plan_buckets(const std::vector<ParamRange>& layers, int64_t total,
                                     int64_t bucket_bytes, int64_t first_bucket_bytes);

// The slice size (parameters) for Model::set_hook_slice under these options: with MRA overlapping
// backward, wide layers are announced in slices of about the first bucket, so a bucket can close (and
// its communication start) in the middle of a layer; otherwise 0 (whole layers).
int64_t hook_slice_floats(const GradSyncOptions& options);

// Applies the optimizer to params[0, count) with grads[0, count), whose state starts at state_offset.
using Updater = std::function<void(float* params, const float* grads, int64_t state_offset, int64_t count)>;

struct SyncTimes {
  double wait_ms = 0;    // plain: waiting for the slowest rank before communicating
  double comm_ms = 0;    // communication the step waited for (for MRA: finish_step's wall time)
  double update_ms = 0;  // time in the updater (for MRA, on the communication thread, mostly hidden)
};

class GradientSync {
 public:
  virtual ~GradientSync() = default;
  virtual std::string describe() const = 0;
  // Parameters whose optimizer state this rank keeps: all of them, or its shards (sharded MRA).
  virtual int64_t state_count() const = 0;
  // Before the step's forward/backward; `update` is called for every range this rank updates.
  virtual void begin_step(Updater update) = 0;
  // The model's gradients-ready hook (Model::on_gradients_ready).
  virtual void gradients_ready(int64_t offset) = 0;
  // After backward: completes the sums and the update. On return every rank holds the same parameters,
  // except that with overlap_forward they may still be arriving: parameters_needed and settle wait.
  virtual SyncTimes finish_step() = 0;
  // The model's parameters-needed hook (Model::on_parameters_needed): returns once [0, end) is final.
  virtual void parameters_needed(int64_t /*end*/) {}
  // Waiting in parameters_needed since begin_step (exposed communication inside the forward), in ms.
  virtual double forward_wait_ms() const { return 0; }
  // Returns once every parameter is final (before evaluating, checkpointing or reading them).
  virtual void settle() {}
  // Checkpoints. Collective: every rank calls it. This rank's optimizer state (slot major over
  // state_count()) to the whole state (slot major over all parameters), and back.
  virtual std::vector<float> full_state(std::span<const float> mine, int slots) = 0;
  virtual std::vector<float> my_state(std::span<const float> full, int slots) const = 0;
  // The parameters whose optimizer state rank `rank` of these ranks keeps, in the order of its state (slot
  // k's values of these ranges one after another): all of them, or its shards. Not collective.
  virtual std::vector<ParamRange> state_ranges(int rank) const = 0;
};

// params, grads: the model's flat buffers (host memory); layers: its parameter ranges in forward order.
std::unique_ptr<GradientSync> make_gradient_sync(const GradSyncOptions& options, Communicator& comm,
                                                 std::span<float> params, std::span<float> grads,
                                                 const std::vector<ParamRange>& layers);

// The same modes over a CollectiveQueue (lib/comm/collective_queue.h), for parameters and gradients in the
// compute backend's memory (GPU ranks: NCCL on a stream of its own). Backward queues each finished
// bucket's sums behind the kernels that produced it; the updates (run by the caller's thread, on the
// compute stream) wait for the sums; each bucket's all-gather is queued behind its update, and with
// overlap_forward the next forward waits for it just before reading the bucket (else finish_step waits).
// "native" and "ring" both mean the queue's allreduce of all gradients after backward. comm: the same
// ranks as the queue, on the host, for checkpoints.
std::unique_ptr<GradientSync> make_queued_gradient_sync(const GradSyncOptions& options, CollectiveQueue& queue,
                                                        Communicator& comm, std::span<float> params,
                                                        std::span<float> grads,
                                                        const std::vector<ParamRange>& layers);

}  // namespace dp
