// CollectiveQueue on the host: a thread of its own runs the queued collectives (collectives.h's ring
// algorithms, on a communicator split from the one given) one after another. A mark is the number of
// operations queued so far; compute_wait blocks until that many have run. The first failure is kept,
// later operations are skipped, and every wait rethrows it.
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "lib/comm/collective_queue.h"
#include "lib/comm/collectives.h"

namespace dp {
namespace {

class HostQueue final : public CollectiveQueue {
 public:
  explicit HostQueue(Communicator& comm) : comm_(comm.split(0, comm.rank())), worker_([this] { work(); }) {}
  ~HostQueue() override {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    queued_cv_.notify_all();
    worker_.join();
  }

  int rank() const override { return comm_->rank(); }
  int size() const override { return comm_->size(); }
  std::string describe() const override { return "ring collectives on a host thread"; }

  void follow_compute() override {}  // host computation is done when the call that queues returns
  Mark mark() override {
    std::lock_guard lock(mutex_);
    return queued_;
  }
  void compute_wait(Mark m) override {
    std::unique_lock lock(mutex_);
    done_cv_.wait(lock, [&] { return done_ >= m || error_; });
    if (error_) std::rethrow_exception(error_);
  }
  void synchronize() override { compute_wait(mark()); }

  void reduce_scatter(std::span<float> data) override {
    push([this, data] { dp::reduce_scatter(*comm_, data, ring()); });
  }
  void allgather_shards(std::span<float> data) override {
    push([this, data] { dp::allgather_shards(*comm_, data, ring()); });
  }
  void allreduce(std::span<float> data) override {
    push([this, data] { dp::allreduce(*comm_, data, ring()); });
  }

 private:
  static CollectiveOptions ring() { return {CollectiveAlgorithm::ring, kDefaultSegmentBytes, {}}; }

  void push(std::function<void()> op) {
    {
      std::lock_guard lock(mutex_);
      ops_.push_back(std::move(op));
      ++queued_;
    }
    queued_cv_.notify_one();
  }

  void work() {
    std::unique_lock lock(mutex_);
    while (true) {
      queued_cv_.wait(lock, [&] { return stop_ || !ops_.empty(); });
      if (ops_.empty()) return;  // stopping, and nothing left
      std::function<void()> op = std::move(ops_.front());
      ops_.pop_front();
      const bool failed = error_ != nullptr;
      lock.unlock();
      std::exception_ptr error;
      if (!failed) {
        try {
          op();
        } catch (...) {
          error = std::current_exception();
        }
      }
      lock.lock();
      if (error && !error_) error_ = error;
      ++done_;
      done_cv_.notify_all();
    }
  }

  std::unique_ptr<Communicator> comm_;
  std::mutex mutex_;
  std::condition_variable queued_cv_, done_cv_;
  std::deque<std::function<void()>> ops_;
  Mark queued_ = 0, done_ = 0;
  std::exception_ptr error_;
  bool stop_ = false;
  std::thread worker_;  // last: starts once everything it uses exists
};

}  // namespace

std::unique_ptr<CollectiveQueue> make_host_queue(Communicator& comm) { return std::make_unique<HostQueue>(comm); }

}  // namespace dp
