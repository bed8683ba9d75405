// MRA: bucketed reduce-scatter -> sharded update -> all-gather, run on a communication thread as backward
// hands over finished buckets (or after backward, without overlap). See mra.h.
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "lib/core/error.h"
#include "lib/mra/sync_internal.h"

namespace dp {
namespace {

class MraSync final : public GradientSync {
 public:
  MraSync(const GradSyncOptions& o, Communicator& comm, std::span<float> params, std::span<float> grads,
          const std::vector<ParamRange>& layers)
      : options_(o), comm_(comm.split(0, comm.rank())), params_(params), grads_(grads) {
    buckets_ = plan_buckets(layers, int64_t(params.size()), o.bucket_bytes, o.first_bucket_bytes);
    for (const ParamRange& b : buckets_) {
      const ShardRange r = o.sharded_update ? shard_range(size_t(b.count), comm_->size(), comm_->rank())
                                            : ShardRange{0, size_t(b.count)};
      shards_.push_back({b.offset + int64_t(r.offset), int64_t(r.count)});
      state_offsets_.push_back(o.sharded_update ? state_count_ : b.offset);
      state_count_ += int64_t(r.count);
    }
    if (!o.sharded_update) state_count_ = int64_t(params.size());
    if (o.overlap) worker_ = std::thread([this] { work(); });
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
    return fmt::format("MRA: {} bucket(s) of up to {:g} MB (first {:g} MB), {}{}, {}",
                       buckets_.size(), double(options_.bucket_bytes) / 1e6,
                       double(options_.first_bucket_bytes) / 1e6,
                       options_.sharded_update ? "ring reduce-scatter" : "ring allreduce",
                       options_.overlap ? " overlapping backward" : " after backward",
                       options_.sharded_update ? "sharded update fused into it, all-gather" : "full update");
  }
  int64_t state_count() const override { return state_count_; }

  void begin_step(Updater update) override {
    std::lock_guard lock(mutex_);
    update_ = std::move(update);
    submitted_ = done_ = 0;
    update_ms_ = 0;
    error_ = nullptr;
  }

  void gradients_ready(int64_t offset) override {
    std::unique_lock lock(mutex_);
    const size_t before = submitted_;
    while (submitted_ < buckets_.size() && buckets_[submitted_].offset >= offset) ++submitted_;
    lock.unlock();
    if (submitted_ != before) wake_.notify_one();
  }

  SyncTimes finish_step() override {
    const auto t0 = sync_clock::now();
    gradients_ready(0);  // everything is final now
    if (options_.overlap) {
      std::unique_lock lock(mutex_);
      finished_.wait(lock, [&] { return done_ == buckets_.size(); });
      if (error_) std::rethrow_exception(error_);
    } else {
      for (size_t b = 0; b < buckets_.size(); ++b) process(b);
    }
    SyncTimes t;
    t.comm_ms = ms_between(t0, sync_clock::now());
    std::lock_guard lock(mutex_);
    t.update_ms = update_ms_;
    return t;
  }

  std::vector<float> full_state(std::span<const float> mine, int slots) override {
    if (!options_.sharded_update) return {mine.begin(), mine.end()};
    const size_t total = params_.size();
    std::vector<float> full(size_t(slots) * total, 0.0f);
    for (int s = 0; s < slots; ++s)
      for (size_t b = 0; b < buckets_.size(); ++b)
        std::copy_n(mine.begin() + s * state_count_ + state_offsets_[b], shards_[b].count,
                    full.begin() + int64_t(size_t(s) * total) + shards_[b].offset);
    comm_->allreduce_sum(std::span<float>(full));  // every element is one rank's value plus zeros: exact
    return full;
  }

  std::vector<float> my_state(std::span<const float> full, int slots) const override {
    if (!options_.sharded_update) return {full.begin(), full.end()};
    const size_t total = params_.size();
    std::vector<float> mine(size_t(slots) * size_t(state_count_));
    for (int s = 0; s < slots; ++s)
      for (size_t b = 0; b < buckets_.size(); ++b)
        std::copy_n(full.begin() + int64_t(size_t(s) * total) + shards_[b].offset, shards_[b].count,
                    mine.begin() + s * state_count_ + state_offsets_[b]);
    return mine;
  }

 private:
  // One bucket: sum its gradients, update this rank's part, and share the updated parameters. Sharded, the
  // update is fused into the reduce-scatter: each segment of the shard is updated as soon as its sum is
  // complete, while the gradients are still in cache and the next segment is in flight.
  void process(size_t b) {
    const ParamRange bucket = buckets_[b], shard = shards_[b];
    auto grads = grads_.subspan(size_t(bucket.offset), size_t(bucket.count));
    auto params = params_.subspan(size_t(bucket.offset), size_t(bucket.count));
    double ms = 0;
    auto update = [&](int64_t offset, int64_t count) {  // offset relative to the bucket
      const auto t0 = sync_clock::now();
      const int64_t in_shard = bucket.offset + offset - shard.offset;
      update_(params.data() + offset, grads.data() + offset, state_offsets_[b] + in_shard, count);
      ms += ms_between(t0, sync_clock::now());
    };
    CollectiveOptions ring{CollectiveAlgorithm::ring, kDefaultSegmentBytes, {}};
    if (options_.sharded_update) {
      ring.on_shard_piece = [&](size_t offset, size_t count) { update(int64_t(offset), int64_t(count)); };
      reduce_scatter(*comm_, grads, ring);
      ring.on_shard_piece = nullptr;
      allgather_shards(*comm_, params, ring);  // everyone's updated shards
    } else {
      allreduce(*comm_, grads, ring);
      update(0, bucket.count);
    }
    std::lock_guard lock(mutex_);
    update_ms_ += ms;
  }

  // The communication thread: buckets in the order backward submitted them (the same on every rank).
  void work() {
    std::unique_lock lock(mutex_);
    while (true) {
      wake_.wait(lock, [&] { return stop_ || done_ < submitted_; });
      if (stop_) return;
      const size_t b = done_;
      const bool failed = error_ != nullptr;
      lock.unlock();
      if (!failed) {
        try {
          process(b);
        } catch (...) {
          std::lock_guard relock(mutex_);
          error_ = std::current_exception();
        }
      }
      lock.lock();
      ++done_;
      if (done_ == buckets_.size()) finished_.notify_all();
    }
  }

  GradSyncOptions options_;
  std::unique_ptr<Communicator> comm_;
  std::span<float> params_, grads_;
  std::vector<ParamRange> buckets_, shards_;  // shards_[b]: this rank's part of bucket b (absolute offsets)
  std::vector<int64_t> state_offsets_;        // where bucket b's shard's optimizer state starts
  int64_t state_count_ = 0;

  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  Updater update_;
  size_t submitted_ = 0, done_ = 0;
  double update_ms_ = 0;
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
  if (options.algorithm == "mra") return make_mra_sync(options, comm, params, grads, layers);
  return make_plain_sync(parse_collective_algorithm(options.algorithm), comm, params, grads, layers);
}

}  // namespace dp
