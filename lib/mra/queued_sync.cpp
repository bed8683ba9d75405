// Data parallelism and MRA over a CollectiveQueue (GPU ranks: NCCL on a stream; tests: a host thread).
// Nothing here blocks on communication unless it must: backward queues each finished bucket's
// reduce-scatter behind the kernels that produced it; finish_step makes the updates wait for the sums,
// queues each bucket's all-gather behind its update, first layers first; the next forward waits for each
// bucket's all-gather just before it reads that bucket's parameters. On a GPU all of this is ordering
// between streams, and the host never waits. See mra.h for the modes.
#include <fmt/format.h>

#include "lib/comm/collective_queue.h"
#include "lib/core/error.h"
#include "lib/mra/sync_internal.h"

namespace dp {
namespace {

// Plain data parallelism is the degenerate plan: one bucket, summed whole after backward, full update.
GradSyncOptions effective(const GradSyncOptions& o) {
  if (o.algorithm == CommAlgorithm::mra) return o;
  GradSyncOptions plain = o;
  plain.bucket_bytes = plain.first_bucket_bytes = int64_t(1) << 62;
  plain.overlap = plain.overlap_forward = plain.sharded_update = false;
  return plain;
}

class QueuedSync final : public GradientSync {
 public:
  QueuedSync(const GradSyncOptions& o, CollectiveQueue& queue, Communicator& comm, std::span<float> params,
             std::span<float> grads, const std::vector<ParamRange>& layers)
      : options_(effective(o)), mra_(o.algorithm == CommAlgorithm::mra), queue_(queue), comm_(comm), params_(params),
        grads_(grads), plan_(options_, queue.size(), queue.rank(), layers, int64_t(params.size())),
        overlap_(options_.overlap && plan_.buckets.size() > 1),
        defer_gather_(options_.overlap_forward && options_.sharded_update),
        gathered_(plan_.buckets.size(), 0), next_wait_(plan_.buckets.size()) {
    DP_CHECK(comm.size() == queue.size() && comm.rank() == queue.rank(), "queue and communicator differ");
  }

  std::string describe() const override {
    if (!mra_) return fmt::format("plain data parallelism on {}: one allreduce of all gradients after "
                                  "backward, full update", queue_.describe());
    return fmt::format("MRA on {}: {} bucket(s) of up to {:g} MB (first {:g} MB), {} {}, {}{}",
                       queue_.describe(), plan_.buckets.size(), double(options_.bucket_bytes) / 1e6,
                       double(options_.first_bucket_bytes) / 1e6,
                       options_.sharded_update ? "reduce-scatter" : "allreduce",
                       overlap_ ? "overlapping backward" : "after backward",
                       options_.sharded_update ? "sharded update, all-gather" : "full update",
                       defer_gather_ ? " overlapping the next forward" : "");
  }
  int64_t state_count() const override { return plan_.state_count; }

  void begin_step(Updater update) override {
    update_ = std::move(update);
    submitted_ = 0;
    forward_wait_ms_ = 0;
  }

  void gradients_ready(int64_t offset) override {
    if (overlap_) submit_through(offset);
  }

  SyncTimes finish_step() override {
    const auto t0 = sync_clock::now();
    submit_through(0);
    queue_.compute_wait(queue_.mark());  // the updates read the sums (and rewrite gathered parameters)
    SyncTimes t;
    const size_t count = plan_.buckets.size();
    for (size_t i = 0; i < count; ++i) {  // first layers (the last bucket) first: the forward needs them first
      const size_t b = count - 1 - i;
      const ParamRange part = plan_.shards[b], bucket = plan_.buckets[b];
      const auto u0 = sync_clock::now();
      update_(params_.data() + part.offset, grads_.data() + part.offset, plan_.state_offsets[b], part.count);
      t.update_ms += ms_between(u0, sync_clock::now());
      if (!options_.sharded_update) continue;
      queue_.follow_compute();
      queue_.allgather_shards(params_.subspan(size_t(bucket.offset), size_t(bucket.count)));
      gathered_[i] = queue_.mark();
    }
    next_wait_ = options_.sharded_update ? 0 : count;
    if (!defer_gather_) wait_gathered_through(int64_t(params_.size()));
    t.comm_ms = ms_between(t0, sync_clock::now()) - t.update_ms;
    return t;
  }

  void parameters_needed(int64_t end) override {
    if (next_wait_ == plan_.buckets.size()) return;
    const auto t0 = sync_clock::now();
    wait_gathered_through(end);
    forward_wait_ms_ += ms_between(t0, sync_clock::now());
  }
  double forward_wait_ms() const override { return forward_wait_ms_; }

  void settle() override {
    wait_gathered_through(int64_t(params_.size()));
    queue_.synchronize();
  }

  std::vector<float> full_state(std::span<const float> mine, int slots) override {
    settle();
    return plan_.full_state(comm_, mine, slots);
  }
  std::vector<float> my_state(std::span<const float> full, int slots) const override {
    return plan_.my_state(full, slots);
  }
  std::vector<ParamRange> state_ranges(int rank) const override { return plan_.ranges_of(rank); }

 private:
  // The computation waits for the all-gathers of every bucket that starts before `end`.
  void wait_gathered_through(int64_t end) {
    const size_t count = plan_.buckets.size();
    while (next_wait_ < count && plan_.buckets[count - 1 - next_wait_].offset < end)
      queue_.compute_wait(gathered_[next_wait_++]);
  }

  // Queues the sums of every bucket of this step that lies at or after `offset` and is not queued yet
  // (buckets are in backward order, so those are a prefix of the plan).
  void submit_through(int64_t offset) {
    const size_t count = plan_.buckets.size();
    size_t ready = submitted_;
    while (ready < count && plan_.buckets[ready].offset >= offset) ++ready;
    if (ready == submitted_) return;
    queue_.follow_compute();
    for (; submitted_ < ready; ++submitted_) {
      const ParamRange b = plan_.buckets[submitted_];
      const auto grads = grads_.subspan(size_t(b.offset), size_t(b.count));
      if (options_.sharded_update)
        queue_.reduce_scatter(grads);
      else
        queue_.allreduce(grads);
    }
  }

  const GradSyncOptions options_;
  const bool mra_;
  CollectiveQueue& queue_;
  Communicator& comm_;  // checkpoints only
  std::span<float> params_, grads_;
  const ShardPlan plan_;
  const bool overlap_;       // sums queued as backward finishes buckets (else all after backward)
  const bool defer_gather_;  // the next forward waits for each bucket's all-gather (else finish_step does)
  Updater update_;
  size_t submitted_ = 0;                     // buckets of this step whose sums are queued
  std::vector<CollectiveQueue::Mark> gathered_;  // i-th all-gather (first layers first) done
  size_t next_wait_;                         // all-gathers the computation already waits for
  double forward_wait_ms_ = 0;
};

}  // namespace

std::unique_ptr<GradientSync> make_queued_gradient_sync(const GradSyncOptions& options, CollectiveQueue& queue,
                                                        Communicator& comm, std::span<float> params,
                                                        std::span<float> grads,
                                                        const std::vector<ParamRange>& layers) {
  return std::make_unique<QueuedSync>(options, queue, comm, params, grads, layers);
}

}  // namespace dp
