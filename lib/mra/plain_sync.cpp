// Plain data parallelism, the baseline MRA is measured against: after backward, wait for every rank, sum
// each layer's gradients with one allreduce (the transport's own or the ring), update everything.
#include <chrono>

#include <fmt/format.h>

#include "lib/comm/collectives.h"
#include "lib/core/trace.h"
#include "lib/mra/sync_internal.h"

namespace dp {
namespace {

class PlainSync final : public GradientSync {
 public:
  PlainSync(CollectiveAlgorithm algorithm, Communicator& comm, std::span<float> params, std::span<float> grads,
            const std::vector<ParamRange>& layers)
      : comm_(comm.split(0, comm.rank())), params_(params), grads_(grads), algorithm_(algorithm) {
    for (const ParamRange& l : layers)
      if (l.count > 0) layers_.push_back(l);
  }

  std::string describe() const override {
    return fmt::format("plain data parallelism: {} allreduce per layer ({} layers) after backward, full update",
                       collective_algorithm_name(algorithm_), layers_.size());
  }
  int64_t state_count() const override { return int64_t(params_.size()); }
  void begin_step(Updater update) override { update_ = std::move(update); }
  void gradients_ready(int64_t) override {}

  SyncTimes finish_step() override {
    SyncTimes t;
    const auto t0 = sync_clock::now();
    auto t1 = t0;
    if (comm_->size() > 1) {
      {
        const TraceScope traced("wait for slowest rank");
        comm_->barrier();  // so that waiting for the slowest rank is not counted as communication
      }
      t1 = sync_clock::now();
      const CollectiveOptions options{algorithm_, kDefaultSegmentBytes, {}};
      for (size_t i = 0; i < layers_.size(); ++i) {
        const ParamRange& l = layers_[i];
        const TraceScope traced("allreduce", {"layer", int64_t(i)}, {"bytes", l.count * int64_t(sizeof(float))});
        allreduce(*comm_, grads_.subspan(size_t(l.offset), size_t(l.count)), options);
      }
    }
    const auto t2 = sync_clock::now();
    {
      const TraceScope traced("update", {"params", int64_t(params_.size())});
      update_(params_.data(), grads_.data(), 0, int64_t(params_.size()));
    }
    const auto t3 = sync_clock::now();
    t.wait_ms = ms_between(t0, t1);
    t.comm_ms = ms_between(t1, t2);
    t.update_ms = ms_between(t2, t3);
    return t;
  }

  std::vector<float> full_state(std::span<const float> mine, int) override { return {mine.begin(), mine.end()}; }
  std::vector<float> my_state(std::span<const float> full, int) const override { return {full.begin(), full.end()}; }
  std::vector<ParamRange> state_ranges(int) const override { return {{0, int64_t(params_.size())}}; }

 private:
  std::unique_ptr<Communicator> comm_;
  std::span<float> params_, grads_;
  CollectiveAlgorithm algorithm_;
  std::vector<ParamRange> layers_;
  Updater update_;
};

}  // namespace

std::unique_ptr<GradientSync> make_plain_sync(CollectiveAlgorithm algorithm, Communicator& comm,
                                              std::span<float> params, std::span<float> grads,
                                              const std::vector<ParamRange>& layers) {
  return std::make_unique<PlainSync>(algorithm, comm, params, grads, layers);
}

}  // namespace dp
