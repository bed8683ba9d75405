// Communicator of the thread transport: point-to-point on the fabric's mailboxes, the transport
// collectives built from point-to-point in a fixed order (so results are deterministic), split(), and
// run_thread_ranks. Internal messages use negative tags, which users cannot post.
#include "lib/comm/thread_communicator.h"

#include <unistd.h>

#include <algorithm>
#include <thread>
#include <tuple>

#include "lib/comm/thread_fabric.h"
#include "lib/core/error.h"

namespace dp {
namespace {

using threads::Fabric;
using threads::Group;
using threads::Message;

constexpr int kTagAllreduce = -1, kTagBroadcast = -2, kTagAllgather = -3, kTagBarrier = -4;

class ThreadRequest final : public Request::Impl {
 public:
  ThreadRequest(std::shared_ptr<Fabric> f, std::shared_ptr<Group> g, std::shared_ptr<Message> m)
      : fabric_(std::move(f)), group_(std::move(g)), message_(std::move(m)) {}
  void wait() override { fabric_->wait(*message_); }
  bool test() override { return fabric_->test(*message_); }
  void abandon() noexcept override { fabric_->abandon(*group_, *message_); }

 private:
  std::shared_ptr<Fabric> fabric_;
  std::shared_ptr<Group> group_;
  std::shared_ptr<Message> message_;
};

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<Fabric> fabric, std::shared_ptr<Group> group, int rank, int thread)
      : fabric_(std::move(fabric)), group_(std::move(group)), rank_(rank), thread_(thread) {}

  int rank() const override { return rank_; }
  int size() const override { return int(group_->boxes.size()); }
  int local_size() const override { return size(); }
  std::string host() const override {
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    return name;
  }

  Request isend(std::span<const std::byte> data, int peer, int tag) override {
    check_user(peer, tag);
    return send(data, peer, tag);
  }
  Request irecv(std::span<std::byte> data, int peer, int tag) override {
    check_user(peer, tag);
    return recv(data, peer, tag);
  }

  using Communicator::allreduce_sum;
  void allreduce_sum(std::span<const float> in, std::span<float> out) override { reduce_sum(in, out); }
  void allreduce_sum(std::span<const double> in, std::span<double> out) override { reduce_sum(in, out); }

  void broadcast(std::span<std::byte> data, int root) override {
    DP_CHECK(root >= 0 && root < size(), "broadcast: root out of range");
    if (rank_ != root) return recv(data, root, kTagBroadcast).wait();
    std::vector<Request> sends;
    for (int r = 0; r < size(); ++r)
      if (r != root) sends.push_back(send(data, r, kTagBroadcast));
    wait_all(sends);
  }

  void allgather(std::span<const std::byte> mine, std::span<std::byte> all) override {
    DP_CHECK(all.size() == mine.size() * size_t(size()), "allgather: receive buffer has the wrong size");
    std::vector<Request> requests;
    for (int r = 0; r < size(); ++r) {
      if (r == rank_) continue;
      requests.push_back(recv(all.subspan(size_t(r) * mine.size(), mine.size()), r, kTagAllgather));
      requests.push_back(send(mine, r, kTagAllgather));
    }
    std::copy(mine.begin(), mine.end(), all.begin() + ptrdiff_t(size_t(rank_) * mine.size()));
    wait_all(requests);
  }

  // Everyone reports to rank 0, which then releases everyone.
  void barrier() override {
    if (rank_ != 0) {
      send({}, 0, kTagBarrier).wait();
      return recv({}, 0, kTagBarrier).wait();
    }
    for (int r = 1; r < size(); ++r) recv({}, r, kTagBarrier).wait();
    std::vector<Request> sends;
    for (int r = 1; r < size(); ++r) sends.push_back(send({}, r, kTagBarrier));
    wait_all(sends);
  }

  std::unique_ptr<Communicator> split(int color, int key) override {
    DP_CHECK(color >= 0, "split: color must be >= 0");
    const auto all = allgather_value(std::pair{color, key});
    std::vector<std::tuple<int, int>> members;  // (key, parent rank) of my color, in new-rank order
    for (int r = 0; r < size(); ++r)
      if (all[size_t(r)].first == color) members.emplace_back(all[size_t(r)].second, r);
    std::sort(members.begin(), members.end());
    const int new_rank = int(std::find(members.begin(), members.end(), std::tuple{key, rank_}) -
                             members.begin());
    auto group = fabric_->join_split(*group_, splits_++, color, int(members.size()));
    return std::make_unique<ThreadCommunicator>(fabric_, std::move(group), new_rank, thread_);
  }

 private:
  void check_user(int peer, int tag) const {
    DP_CHECK(peer >= 0 && peer < size(), "peer rank " + std::to_string(peer) + " out of range");
    DP_CHECK(tag >= 0 && tag <= kMaxTag, "tag " + std::to_string(tag) + " out of range");
  }
  Request send(std::span<const std::byte> data, int peer, int tag) {
    Message m;
    m.is_send = true;
    m.send = data.data();
    m.bytes = data.size();
    m.source = rank_;
    m.dest = peer;
    m.tag = tag;
    m.thread = thread_;
    return Request(std::make_unique<ThreadRequest>(fabric_, group_, fabric_->post(*group_, m)));
  }
  Request recv(std::span<std::byte> data, int peer, int tag) {
    Message m;
    m.recv = data.data();
    m.bytes = data.size();
    m.source = peer;
    m.dest = rank_;
    m.tag = tag;
    m.thread = thread_;
    return Request(std::make_unique<ThreadRequest>(fabric_, group_, fabric_->post(*group_, m)));
  }

  // Rank 0 adds the inputs in rank order ((x0 + x1) + x2 ...), then sends the sum to everyone.
  template <class T>
  void reduce_sum(std::span<const T> in, std::span<T> out) {
    DP_CHECK(in.size() == out.size(), "allreduce_sum: input and output differ in size");
    const auto out_bytes = std::as_writable_bytes(out);
    if (rank_ != 0) {
      send(std::as_bytes(in), 0, kTagAllreduce).wait();
      return recv(out_bytes, 0, kTagAllreduce).wait();
    }
    copy(out_bytes.data(), std::as_bytes(in).data(), out_bytes.size());
    std::vector<T> other(in.size());
    for (int r = 1; r < size(); ++r) {
      recv(std::as_writable_bytes(std::span(other)), r, kTagAllreduce).wait();
      reduce_add(out.data(), other.data(), out.size());
    }
    std::vector<Request> sends;
    for (int r = 1; r < size(); ++r) sends.push_back(send(out_bytes, r, kTagAllreduce));
    wait_all(sends);
  }

  std::shared_ptr<Fabric> fabric_;
  std::shared_ptr<Group> group_;
  int rank_, thread_;
  int64_t splits_ = 0;  // split() calls so far: all ranks make them in the same order
};

std::string describe(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "unknown exception";
  }
}

}  // namespace

void run_thread_ranks(int n, const std::function<void(Communicator&)>& fn) {
  DP_CHECK(n >= 1, "run_thread_ranks: needs at least one rank");
  auto fabric = std::make_shared<Fabric>(n);
  auto group = std::make_shared<Group>(n);
  std::mutex first_mu;
  std::exception_ptr first;  // the exception of the first rank to fail
  auto fail = [&](int rank, std::exception_ptr e) {
    {
      std::lock_guard lock(first_mu);
      if (!first) first = e;
    }
    fabric->abort("rank " + std::to_string(rank) + " failed: " + describe(e));
  };
  std::vector<std::thread> ranks;
  ranks.reserve(size_t(n));
  for (int r = 0; r < n; ++r) {
    try {
      ranks.emplace_back([&, r] {
        try {
          fabric->attach(r);
          ThreadCommunicator comm(fabric, group, r, r);
          fn(comm);
        } catch (...) {
          fail(r, std::current_exception());
        }
        fabric->finished(r);
      });
    } catch (...) {  // could not start the thread: the ranks already running must not wait for it
      fail(r, std::current_exception());
      for (int q = r; q < n; ++q) fabric->finished(q);
      break;
    }
  }
  for (auto& t : ranks) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace dp
