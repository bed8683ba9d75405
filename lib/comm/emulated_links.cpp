// Emulated links: the pacing clock of a process's link, requests that complete no earlier than the
// clock says, and the Communicator decorator. See emulated_links.h for the model.
#include "lib/comm/emulated_links.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <thread>

namespace dp {
namespace {

using Clock = std::chrono::steady_clock;

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

double log2_ceil(int n) { return n > 1 ? std::ceil(std::log2(double(n))) : 0; }

// The two directions of one process's link: when each is free again.
class LinkClock {
 public:
  explicit LinkClock(const LinkModel& m) : model_(m) {}
  const LinkModel& model() const { return model_; }

  // A send posted now is done when its bytes have left; a receive when they have arrived.
  Clock::time_point send(size_t bytes) { return queue(out_free_, double(bytes), 0); }
  Clock::time_point receive(size_t bytes) {
    return queue(in_free_, double(bytes), model_.latency_seconds());
  }

  // A collective posted now that moves `bytes` through each direction: it holds both, then `latency` more.
  Clock::time_point collective(double bytes, double latency) {
    const double transfer = model_.transfer_seconds(bytes);
    if (bytes < kSmallBytes) return Clock::now() + seconds(transfer + latency);
    std::lock_guard lock(mutex_);
    const Clock::time_point start = std::max({Clock::now(), out_free_, in_free_});
    out_free_ = in_free_ = start + seconds(transfer);
    return out_free_ + seconds(latency);
  }

 private:
  // Small messages (control, loss statistics) slip between the packets of bulk transfers, as on a
  // real network, instead of queueing behind megabytes of gradients; bulk transfers queue.
  static constexpr double kSmallBytes = 64 * 1024;

  Clock::time_point queue(Clock::time_point& free, double bytes, double latency) {
    const double transfer = model_.transfer_seconds(bytes);
    if (bytes < kSmallBytes) return Clock::now() + seconds(transfer + latency);
    std::lock_guard lock(mutex_);
    free = std::max(Clock::now(), free) + seconds(transfer);
    return free + seconds(latency);
  }

  LinkModel model_;
  std::mutex mutex_;
  Clock::time_point out_free_{}, in_free_{};
};

class PacedRequest final : public Request::Impl {
 public:
  PacedRequest(Request inner, Clock::time_point due) : inner_(std::move(inner)), due_(due) {}
  // Asleep until the modelled completion (a network transfer takes no CPU), then asleep between polls
  // until the real transfer has happened too, which over shared memory it usually has by then: a
  // communication thread waiting for its peer must not spin on the core its rank computes on.
  void wait() override {
    std::this_thread::sleep_until(due_);
    while (!inner_.test()) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  bool test() override { return inner_.test() && Clock::now() >= due_; }
  void abandon() noexcept override { Request dropped = std::move(inner_); }

 private:
  Request inner_;
  Clock::time_point due_;
};

class EmulatedLinks final : public Communicator {
 public:
  EmulatedLinks(Communicator& inner, std::unique_ptr<Communicator> owned, std::shared_ptr<LinkClock> clock)
      : owned_(std::move(owned)), inner_(inner), clock_(std::move(clock)) {}

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  int local_size() const override { return inner_.local_size(); }
  std::string host() const override { return inner_.host(); }

  Request isend(std::span<const std::byte> data, int peer, int tag) override {
    const Clock::time_point due = clock_->send(data.size());
    return paced(inner_.isend(data, peer, tag), due);
  }
  Request irecv(std::span<std::byte> data, int peer, int tag) override {
    const Clock::time_point due = clock_->receive(data.size());
    return paced(inner_.irecv(data, peer, tag), due);
  }

  Memory allocate(size_t bytes) override { return inner_.allocate(bytes); }
  void copy(std::byte* dst, const std::byte* src, size_t bytes) override { inner_.copy(dst, src, bytes); }
  void reduce_add(float* dst, const float* a, const float* b, size_t n) override { inner_.reduce_add(dst, a, b, n); }
  void reduce_add(double* dst, const double* a, const double* b, size_t n) override {
    inner_.reduce_add(dst, a, b, n);
  }

  void allreduce_sum(std::span<const float> in, std::span<float> out) override {
    const auto due = ring_cost(2, double(in.size_bytes()));
    inner_.allreduce_sum(in, out);
    std::this_thread::sleep_until(due);
  }
  void allreduce_sum(std::span<const double> in, std::span<double> out) override {
    const auto due = ring_cost(2, double(in.size_bytes()));
    inner_.allreduce_sum(in, out);
    std::this_thread::sleep_until(due);
  }
  void allgather(std::span<const std::byte> mine, std::span<std::byte> all) override {
    const auto due = ring_cost(1, double(all.size()));
    inner_.allgather(mine, all);
    std::this_thread::sleep_until(due);
  }
  void broadcast(std::span<std::byte> data, int root) override {
    const LinkModel& m = clock_->model();
    const auto due = size() > 1 ? clock_->collective(double(data.size()), log2_ceil(size()) * m.latency_seconds())
                                : Clock::now();
    inner_.broadcast(data, root);
    std::this_thread::sleep_until(due);
  }
  void barrier() override {
    const auto due = size() > 1 ? clock_->collective(0, 2 * log2_ceil(size()) * clock_->model().latency_seconds())
                                : Clock::now();
    inner_.barrier();
    std::this_thread::sleep_until(due);
  }

  std::unique_ptr<Communicator> split(int color, int key) override {
    std::unique_ptr<Communicator> sub = inner_.split(color, key);
    if (!sub) return nullptr;
    Communicator& ref = *sub;
    return std::make_unique<EmulatedLinks>(ref, std::move(sub), clock_);
  }

 private:
  static Request paced(Request inner, Clock::time_point due) {
    return Request(std::make_unique<PacedRequest>(std::move(inner), due));
  }
  // The ring's time for a collective that moves `passes` x (n-1)/n x `bytes` through each link.
  Clock::time_point ring_cost(int passes, double bytes) {
    const int n = size();
    if (n <= 1) return Clock::now();
    const LinkModel& m = clock_->model();
    return clock_->collective(passes * bytes * (n - 1) / n, passes * (n - 1) * m.latency_seconds());
  }

  std::unique_ptr<Communicator> owned_;  // a split's communicator; empty for the one first wrapped
  Communicator& inner_;
  std::shared_ptr<LinkClock> clock_;
};

}  // namespace

std::unique_ptr<Communicator> emulate_links(Communicator& inner, const LinkModel& link) {
  return std::make_unique<EmulatedLinks>(inner, nullptr, std::make_shared<LinkClock>(link));
}

}  // namespace dp
