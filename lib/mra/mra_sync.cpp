// MRA: bucketed reduce-scatter -> sharded update -> all-gather, run on a communication thread as backward
// hands over finished buckets (or after backward, without overlap). See mra.h.
#include <condition_variable>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "lib/core/error.h"
#include "lib/core/trace.h"
#include "lib/mra/sync_internal.h"

namespace dp {
namespace {

class MraSync final : public GradientSync {
 public:
  MraSync(const GradSyncOptions& o, Communicator& comm, std::span<float> params, std::span<float> grads,
          const std::vector<ParamRange>& layers)
      : options_(o), comm_(comm.split(0, comm.rank())), params_(params), grads_(grads),
        plan_(o, comm_->size(), comm_->rank(), layers, int64_t(params.size())),
        // One bucket is complete only when backward is: a thread would have nothing to overlap.
        overlap_(o.overlap && plan_.buckets.size() > 1),
        defer_gather_(overlap_ && o.overlap_forward && o.sharded_update), final_end_(int64_t(params.size())) {
    updated_.assign(plan_.buckets.size(), 0);
    next_claim_ = plan_.buckets.size();  // nothing to claim before the first step's sums
    // The communication thread records on the rank's "comm" track of the tracer of the thread building it.
    if (overlap_)
      worker_ = std::thread([this, tracer = trace_of_this_thread()] {
        const TraceThread traced(tracer, "comm");
        work();
      });
  }

  ~MraSync() override {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    if (worker_.joinable()) worker_.join();
  }

  std::string describe() const override {
    return fmt::format("MRA: {} bucket(s) of up to {:g} MB (first {:g} MB), {}{}, {}{}",
                       plan_.buckets.size(), double(options_.bucket_bytes) / 1e6,
                       double(options_.first_bucket_bytes) / 1e6,
                       options_.sharded_update ? "ring reduce-scatter" : "ring allreduce",
                       overlap_           ? " overlapping backward"
                       : options_.overlap ? " after backward (one bucket: nothing to overlap)"
                                          : " after backward",
                       !options_.sharded_update ? "full update"
                       : defer_gather_          ? "sharded update and all-gather"
                                                : "sharded update fused into it, all-gather",
                       defer_gather_ ? " overlapping the next forward" : "");
  }
  int64_t state_count() const override { return plan_.state_count; }

  void begin_step(Updater update) override {
    std::lock_guard lock(mutex_);
    update_ = std::move(update);
    step_base_ = steps_begun_++ * int64_t(plan_.buckets.size());
    update_ms_ = 0;
    forward_wait_ms_ = 0;
  }

  void gradients_ready(int64_t offset) override {
    int64_t ready = 0;  // buckets of this step that backward has finished: a prefix of plan_.buckets
    while (ready < int64_t(plan_.buckets.size()) && plan_.buckets[size_t(ready)].offset >= offset) ++ready;
    std::unique_lock lock(mutex_);
    if (step_base_ + ready <= submitted_) return;
    submitted_ = step_base_ + ready;
    lock.unlock();
    wake_.notify_one();
  }

  SyncTimes finish_step() override {
    const auto t0 = sync_clock::now();
    const TraceScope traced(overlap_ ? "wait for gradient sums" : "gradient sync");
    gradients_ready(0);  // everything is final now
    if (overlap_) {
      std::unique_lock lock(mutex_);
      finished_.wait(lock, [&] { return reduced_ == step_base_ + int64_t(plan_.buckets.size()); });
      if (error_) std::rethrow_exception(error_);
    } else {
      for (size_t b = 0; b < plan_.buckets.size(); ++b) {
        reduce_and_update(b);
        gather(b);
      }
    }
    SyncTimes t;
    t.comm_ms = ms_between(t0, sync_clock::now());
    std::lock_guard lock(mutex_);
    t.update_ms = update_ms_;
    return t;
  }

  // Waiting for its parameters, the forward does the deferred updates the all-gathers will need next.
  void parameters_needed(int64_t end) override {
    if (!defer_gather_) return;
    std::unique_lock lock(mutex_);
    if (final_end_ >= end && !error_) return;
    const auto t0 = sync_clock::now();
    const TraceScope traced("wait for parameters", {"end", end});
    double updating_ms = 0;
    while (true) {
      gathered_.wait(lock, [&] { return final_end_ >= end || error_ || update_to_claim(); });
      if (final_end_ >= end || error_) break;
      const auto u0 = sync_clock::now();
      claim_and_update(lock);
      updating_ms += ms_between(u0, sync_clock::now());
    }
    if (error_) std::rethrow_exception(error_);
    forward_wait_ms_ += ms_between(t0, sync_clock::now()) - updating_ms;
  }
  double forward_wait_ms() const override { return forward_wait_ms_; }

  void settle() override { parameters_needed(int64_t(params_.size())); }

  std::vector<float> full_state(std::span<const float> mine, int slots) override {
    if (options_.sharded_update) settle();  // the communicator is the worker's until its all-gathers are done
    return plan_.full_state(*comm_, mine, slots);
  }
  std::vector<float> my_state(std::span<const float> full, int slots) const override {
    return plan_.my_state(full, slots);
  }
  std::vector<ParamRange> state_ranges(int rank) const override { return plan_.ranges_of(rank); }

 private:
  // Sums bucket b's gradients and updates this rank's part. Sharded, the update is fused into the
  // reduce-scatter: each segment of the shard is updated as soon as its sum is complete, while the
  // gradients are still in cache and the next segment is in flight. With deferred all-gathers the update
  // waits too (see work()): only the sums are made here.
  void reduce_and_update(size_t b) {
    const ParamRange bucket = plan_.buckets[b], shard = plan_.shards[b];
    auto grads = grads_.subspan(size_t(bucket.offset), size_t(bucket.count));
    auto params = params_.subspan(size_t(bucket.offset), size_t(bucket.count));
    double ms = 0;
    auto update = [&](int64_t offset, int64_t count) {  // offset relative to the bucket
      const TraceScope traced("update", {"bucket", int64_t(b)}, {"params", count});
      const auto t0 = sync_clock::now();
      const int64_t in_shard = bucket.offset + offset - shard.offset;
      update_(params.data() + offset, grads.data() + offset, plan_.state_offsets[b] + in_shard, count);
      ms += ms_between(t0, sync_clock::now());
    };
    CollectiveOptions ring{CollectiveAlgorithm::ring, kDefaultSegmentBytes, {}};
    const TraceScope traced(options_.sharded_update ? "reduce-scatter" : "allreduce", {"bucket", int64_t(b)},
                            {"bytes", bucket.count * int64_t(sizeof(float))});
    if (options_.sharded_update) {
      if (!defer_gather_)
        ring.on_shard_piece = [&](size_t offset, size_t count) { update(int64_t(offset), int64_t(count)); };
      ring.rest_is_scratch = true;  // only this rank's shard of the gradients is read after the sum
      reduce_scatter(*comm_, grads, ring);
    } else {
      allreduce(*comm_, grads, ring);
      update(0, bucket.count);
    }
    std::lock_guard lock(mutex_);
    update_ms_ += ms;
  }

  // Shares bucket b's updated shards (nothing to share when every rank updated all of it).
  void gather(size_t b) {
    if (!options_.sharded_update) return;
    const ParamRange bucket = plan_.buckets[b];
    const TraceScope traced("all-gather", {"bucket", int64_t(b)}, {"bytes", bucket.count * int64_t(sizeof(float))});
    const CollectiveOptions ring{CollectiveAlgorithm::ring, kDefaultSegmentBytes, {}};
    allgather_shards(*comm_, params_.subspan(size_t(bucket.offset), size_t(bucket.count)), ring);
  }

  // Runs fn unless an earlier job failed; a failure is kept for the waiting threads.
  template <class Fn>
  void guarded(std::unique_lock<std::mutex>& lock, Fn fn) {
    const bool failed = error_ != nullptr;
    lock.unlock();
    if (!failed) {
      try {
        fn();
      } catch (...) {
        std::lock_guard relock(mutex_);
        error_ = std::current_exception();
      }
    }
    lock.lock();
  }

  // The communication thread: buckets in the order backward submitted them (the same on every rank).
  // Deferred, the all-gathers follow the step's last update, first layers (the last bucket) first.
  void work() {
    const size_t count = plan_.buckets.size();
    std::unique_lock lock(mutex_);
    while (true) {
      wake_.wait(lock, [&] { return stop_ || reduced_ < submitted_; });
      if (stop_) return;
      const size_t b = size_t(reduced_ % int64_t(count));
      guarded(lock, [&] {
        reduce_and_update(b);
        if (!defer_gather_) gather(b);
      });
      const bool last = b + 1 == count;
      if (last && defer_gather_) {  // before finish_step can return and the next step begin
        final_end_ = 0;
        gather_update_ = update_;
        next_claim_ = 0;
        std::fill(updated_.begin(), updated_.end(), 0);
      }
      ++reduced_;
      if (last || error_) finished_.notify_all();
      if (!last || !defer_gather_) continue;
      gathered_.notify_all();  // updates can be claimed
      for (size_t i = 0; i < count; ++i) {  // first layers (the last bucket) first
        if (next_claim_ == i) claim_and_update(lock);
        updated_cv_.wait(lock, [&] { return updated_[i] || error_; });
        const size_t g = count - 1 - i;
        guarded(lock, [&] { gather(g); });
        final_end_ = plan_.buckets[g].end();
        gathered_.notify_all();
      }
    }
  }

  // Deferred updates, claimed in all-gather order by the communication thread (for the bucket it gathers
  // next) or by the forward while it waits. Called with the lock held.
  bool update_to_claim() const { return next_claim_ < plan_.buckets.size(); }  // all claimed outside gathering
  void claim_and_update(std::unique_lock<std::mutex>& lock) {
    const size_t i = next_claim_++, g = plan_.buckets.size() - 1 - i;
    const Updater update = gather_update_;
    guarded(lock, [&] {
      const auto t0 = sync_clock::now();
      const ParamRange shard = plan_.shards[g];
      const TraceScope traced("update", {"bucket", int64_t(g)}, {"params", shard.count});
      update(params_.data() + shard.offset, grads_.data() + shard.offset, plan_.state_offsets[g], shard.count);
      const double ms = ms_between(t0, sync_clock::now());
      std::lock_guard relock(mutex_);
      update_ms_ += ms;
    });
    updated_[i] = 1;
    updated_cv_.notify_all();
  }

  GradSyncOptions options_;
  std::unique_ptr<Communicator> comm_;
  std::span<float> params_, grads_;
  const ShardPlan plan_;
  const bool overlap_;       // a communication thread runs the buckets while backward continues
  const bool defer_gather_;

  // Buckets are counted over the whole run: step s's bucket b is number s * buckets + b.
  std::mutex mutex_;
  std::condition_variable wake_, finished_, gathered_, updated_cv_;
  Updater update_;
  // Deferred updates (with overlap_forward) of the step whose sums are done: its updater, the next bucket
  // to claim and which are done, both counted in all-gather order.
  Updater gather_update_;
  size_t next_claim_ = 0;
  std::vector<char> updated_;
  int64_t steps_begun_ = 0, step_base_ = 0, submitted_ = 0, reduced_ = 0;
  int64_t final_end_;  // parameters [0, final_end_) are final (all of them unless all-gathers are pending)
  double update_ms_ = 0, forward_wait_ms_ = 0;
  std::exception_ptr error_;
  bool stop_ = false;
  std::thread worker_;
};

}  // namespace

std::unique_ptr<GradientSync> make_mra_sync(const GradSyncOptions& options, Communicator& comm,
                                            std::span<float> params, std::span<float> grads,
                                            const std::vector<ParamRange>& layers) {
  return std::make_unique<MraSync>(options, comm, params, grads, layers);
}

std::unique_ptr<GradientSync> make_gradient_sync(const GradSyncOptions& options, Communicator& comm,
                                                 std::span<float> params, std::span<float> grads,
                                                 const std::vector<ParamRange>& layers) {
  switch (options.algorithm) {
    case CommAlgorithm::mra: return make_mra_sync(options, comm, params, grads, layers);
    case CommAlgorithm::ring: return make_plain_sync(CollectiveAlgorithm::ring, comm, params, grads, layers);
    case CommAlgorithm::native: return make_plain_sync(CollectiveAlgorithm::native, comm, params, grads, layers);
  }
  throw std::logic_error("make_gradient_sync: a CommAlgorithm without a case");
}

}  // namespace dp
