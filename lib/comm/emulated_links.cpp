// Emulated links: the links between world ranks, the pacing clock of a process's network interface,
// requests that complete no earlier than the clock says, and the Communicator decorator. See
// emulated_links.h for the model.
#include "lib/comm/emulated_links.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <thread>

#include "lib/core/error.h"

#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace dp {
namespace {

using Clock = std::chrono::steady_clock;

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

double log2_ceil(int n) { return n > 1 ? std::ceil(std::log2(double(n))) : 0; }

// Asleep for about `d`. The first time on a thread, asks Linux to wake the thread within a microsecond of
// what it asked for instead of the default 50 us "timer slack" (on a VM a 1 us sleep then takes about 20
// us instead of 80); a wake-up still comes tens of microseconds late here.
void nap(Clock::duration d) {
#ifdef __linux__
  thread_local const bool precise = prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL) == 0;
  (void)precise;
#endif
  std::this_thread::sleep_for(d);
}

// How late a sleeping thread may wake on a VM, and so how long before a deadline a wait stops sleeping
// and yields the core instead (to any thread that has work) until the deadline: a link's latency of 10
// us then takes 10 us, not the 90 a wake-up adds (`profile --links` measured 95 us one way before).
constexpr Clock::duration kWakeLate = std::chrono::microseconds(100);

// Until `t`, precisely: asleep while it is far, yielding the core for its last stretch.
void sleep_until(Clock::time_point t) {
  if (t - Clock::now() > kWakeLate) nap(t - Clock::now() - kWakeLate);
  while (Clock::now() < t) std::this_thread::yield();
}

// Until `ready()`: looks yielding the core in between for the first stretch (a peer's message in a ring
// usually comes within it), then naps of `gap` between looks.
template <class Ready>
void poll_until(Ready ready, Clock::duration gap) {
  const Clock::time_point eager_until = Clock::now() + kWakeLate;
  while (!ready()) {
    if (Clock::now() < eager_until)
      std::this_thread::yield();
    else
      nap(gap);
  }
}

// Small messages (control, loss statistics) slip between the packets of bulk transfers, as on a real
// network, instead of queueing behind megabytes of gradients; bulk transfers queue.
constexpr double kSmallBytes = 64 * 1024;

// The links between the ranks of the world: one for all pairs, or one per ordered pair.
class Network {
 public:
  explicit Network(const LinkModel& uniform) : uniform_(uniform) {}
  explicit Network(LinkMatrix matrix) : matrix_(std::move(matrix)) {}
  LinkModel link(int from, int to) const { return matrix_.ranks > 0 ? matrix_.at(from, to) : uniform_; }

  // The slowest link among `members` (world ranks): the lowest bandwidth (0, unlimited, counts as the
  // highest) and the highest latency of any pair of them, for the bounds of the transport's collectives.
  LinkModel slowest(const std::vector<int>& members) const {
    if (matrix_.ranks == 0) return uniform_;
    LinkModel s;
    for (int a : members)
      for (int b : members) {
        if (a == b) continue;
        const LinkModel& l = matrix_.at(a, b);
        if (l.gbps > 0 && (s.gbps == 0 || l.gbps < s.gbps)) s.gbps = l.gbps;
        s.latency_us = std::max(s.latency_us, l.latency_us);
      }
    return s;
  }
  // The line rate of `rank`'s interface: its fastest link's bandwidth, either way (0, unlimited, when
  // any of its links is unlimited).
  double fastest(int rank) const {
    if (matrix_.ranks == 0) return uniform_.gbps;
    double line = 0;
    for (int peer = 0; peer < matrix_.ranks; ++peer) {
      if (peer == rank) continue;
      for (const LinkModel& l : {matrix_.at(rank, peer), matrix_.at(peer, rank)}) {
        if (l.gbps == 0) return 0;
        line = std::max(line, l.gbps);
      }
    }
    return line;
  }

 private:
  LinkModel uniform_;
  LinkMatrix matrix_;
};

// One process's network interface: its line (each direction as fast as its fastest link) and, behind
// it, a pipe per link speed (each direction), which the flows over links of that speed share as flows
// over one uplink do. A transfer over a link of b bytes/s holds the line for bytes / line rate and its
// speed's pipe for bytes / b: traffic to a slow peer queues behind earlier traffic to slow peers, not in
// front of traffic to fast ones (a NIC of 10 Gbit/s sending over a 1 Gbit/s link is busy a tenth of the
// time, as the namespace cluster's per-destination shaping measures). With every link alike, line and
// pipe are one queue.
class Interface {
 public:
  explicit Interface(double line_gbps) : line_(LinkModel{line_gbps, 0}) {}

  // A bulk send of `bytes` over `link` posted now: done when its bytes have left.
  Clock::time_point send(double bytes, const LinkModel& link) {
    std::lock_guard lock(mutex_);
    const Clock::time_point start = std::max(Clock::now(), out_free_);
    out_free_ = start + seconds(line_seconds(bytes, link));
    Clock::time_point& pipe = out_pipe_[link.gbps];
    pipe = std::max(start, pipe) + seconds(link.transfer_seconds(bytes));
    return std::max(out_free_, pipe);
  }
  // A bulk message of `bytes` over `link` that finished leaving its sender at `left` (the sender's clock:
  // the machine's monotonic clock, which all its processes share): it comes in through the line and its
  // speed's pipe (no earlier than it left, queued behind what came in before it) and is done the link's
  // latency after.
  Clock::time_point arrival(Clock::time_point left, double bytes, const LinkModel& link) {
    std::lock_guard lock(mutex_);
    const double line_busy = line_seconds(bytes, link), busy = link.transfer_seconds(bytes);
    in_free_ = std::max(left - seconds(line_busy), in_free_) + seconds(line_busy);
    Clock::time_point& pipe = in_pipe_[link.gbps];
    pipe = std::max(left - seconds(busy), pipe) + seconds(busy);
    return std::max(in_free_, pipe) + seconds(link.latency_seconds());
  }

  // A collective posted now that moves `bytes` through each direction over links no faster than
  // `slowest`: it holds both directions of the line and of that speed's pipe, then `latency` more.
  // Small ones slip in.
  Clock::time_point collective(double bytes, const LinkModel& slowest, double latency) {
    const double busy = slowest.transfer_seconds(bytes);
    if (bytes < kSmallBytes) return Clock::now() + seconds(busy + latency);
    std::lock_guard lock(mutex_);
    Clock::time_point &out = out_pipe_[slowest.gbps], &in = in_pipe_[slowest.gbps];
    const Clock::time_point start = std::max({Clock::now(), out_free_, in_free_, out, in});
    out_free_ = in_free_ = start + seconds(line_seconds(bytes, slowest));
    out = in = start + seconds(busy);
    return std::max(out_free_, out) + seconds(latency);
  }

 private:
  // A link without a bandwidth (unlimited, as a rank's link to itself) holds no line either.
  double line_seconds(double bytes, const LinkModel& link) const {
    return link.gbps > 0 ? line_.transfer_seconds(bytes) : 0.0;
  }

  const LinkModel line_;
  std::mutex mutex_;
  Clock::time_point out_free_{}, in_free_{};
  std::map<double, Clock::time_point> out_pipe_, in_pipe_;  // by the links' Gbit/s
};

// Completes no earlier than `due` and than the real transfer. Every message travels behind a header, on
// the same tag (MPI keeps their order), that carries when its sender saw its bytes leave: a receive
// learns its `due` from it (a bulk one through its interface, arrival(); a small one its link's latency
// later), so a receive posted long before the send still takes the transfer's time after the send, and
// one posted long after (its rank was computing) completes as soon as it is looked at, as a NIC would
// have taken the bytes in meanwhile.
class PacedRequest final : public Request::Impl {
 public:
  // A send, due at a known time.
  explicit PacedRequest(Clock::time_point due) : due_(due), known_(true) {}
  // A receive of `bytes` over `link`: bulk, due when `nic` says it arrives; small (`nic` null), the
  // link's latency after its bytes left.
  PacedRequest(std::shared_ptr<Interface> nic, double bytes, const LinkModel& link)
      : nic_(std::move(nic)), bytes_(bytes), link_(link) {}

  // The sender's header (when its bytes left, in steady-clock ticks): sent or received into here.
  std::span<std::byte> header() { return std::as_writable_bytes(std::span(&header_, 1)); }
  void set_header(Clock::time_point left) { header_ = left.time_since_epoch().count(); }
  void set_requests(Request header, Request inner) {
    header_request_ = std::move(header);
    inner_ = std::move(inner);
  }

  // Asleep until the modelled completion (a network transfer takes no CPU), then asleep between polls
  // until the real transfer has happened too, which over shared memory it usually has by then: a
  // communication thread waiting for its peer must not spin on the core its rank computes on.
  void wait() override {
    poll_until([&] { return due_known(); }, std::chrono::microseconds(50));
    // Until `due`, a look at the real transfer every 100 us: MPI moves a large message over shared
    // memory in pieces, and only while its ranks call into it.
    constexpr Clock::duration look = std::chrono::microseconds(100);
    while (!arrived() && Clock::now() + look + kWakeLate < due_) nap(look);
    sleep_until(due_);
    poll_until([&] { return arrived(); }, std::chrono::microseconds(20));
  }
  bool test() override { return due_known() && arrived() && Clock::now() >= due_; }
  void abandon() noexcept override {
    Request dropped = std::move(inner_), header = std::move(header_request_);
  }

 private:
  bool due_known() {
    if (known_) return true;
    if (!header_request_.test()) return false;
    const Clock::time_point left{Clock::duration(header_)};
    due_ = nic_ ? nic_->arrival(left, bytes_, link_) : left + seconds(link_.latency_seconds());
    return known_ = true;
  }
  bool arrived() {
    if (seen_) return true;
    if (!header_request_.test() || !inner_.test()) return false;
    return seen_ = true;
  }

  Request header_request_, inner_;  // the header's and the message's own
  Clock::duration::rep header_ = 0;
  std::shared_ptr<Interface> nic_;  // a bulk receive's, to learn its due time
  double bytes_ = 0;
  LinkModel link_;
  Clock::time_point due_{};
  bool known_ = false;
  bool seen_ = false;
};

class EmulatedLinks final : public Communicator {
 public:
  // `world`: the world rank of each rank of `inner`.
  EmulatedLinks(Communicator& inner, std::unique_ptr<Communicator> owned, std::shared_ptr<const Network> network,
                std::shared_ptr<Interface> nic, std::vector<int> world)
      : owned_(std::move(owned)),
        inner_(inner),
        network_(std::move(network)),
        nic_(std::move(nic)),
        world_(std::move(world)),
        slowest_(network_->slowest(world_)) {}

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  int local_size() const override { return inner_.local_size(); }
  std::string host() const override { return inner_.host(); }

  Request isend(std::span<const std::byte> data, int peer, int tag) override {
    const LinkModel link = link_to(peer);
    const double bytes = double(data.size());
    const Clock::time_point due =
        bytes < kSmallBytes ? Clock::now() + seconds(link.transfer_seconds(bytes)) : nic_->send(bytes, link);
    auto r = std::make_unique<PacedRequest>(due);
    r->set_header(due);
    std::lock_guard lock(pairs_);  // the header and its message, one after the other on this tag
    Request header = inner_.isend(r->header(), peer, tag);
    r->set_requests(std::move(header), inner_.isend(data, peer, tag));
    return Request(std::move(r));
  }
  Request irecv(std::span<std::byte> data, int peer, int tag) override {
    const LinkModel link = link_from(peer);
    const double bytes = double(data.size());
    auto r = std::make_unique<PacedRequest>(bytes < kSmallBytes ? nullptr : nic_, bytes, link);
    std::lock_guard lock(pairs_);
    Request header = inner_.irecv(r->header(), peer, tag);
    r->set_requests(std::move(header), inner_.irecv(data, peer, tag));
    return Request(std::move(r));
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
    sleep_until(due);
  }
  void allreduce_sum(std::span<const double> in, std::span<double> out) override {
    const auto due = ring_cost(2, double(in.size_bytes()));
    inner_.allreduce_sum(in, out);
    sleep_until(due);
  }
  void allgather(std::span<const std::byte> mine, std::span<std::byte> all) override {
    const auto due = ring_cost(1, double(all.size()));
    inner_.allgather(mine, all);
    sleep_until(due);
  }
  void broadcast(std::span<std::byte> data, int root) override {
    const double bytes = double(data.size());
    const auto due =
        size() > 1 ? nic_->collective(bytes, slowest_, log2_ceil(size()) * slowest_.latency_seconds()) : Clock::now();
    inner_.broadcast(data, root);
    sleep_until(due);
  }
  void barrier() override {
    const auto due =
        size() > 1 ? nic_->collective(0, slowest_, 2 * log2_ceil(size()) * slowest_.latency_seconds()) : Clock::now();
    inner_.barrier();
    sleep_until(due);
  }

  // The new communicator's ranks learn each other's world ranks (unpaced: setting up costs no network
  // time), so its messages find the links of the world.
  std::unique_ptr<Communicator> split(int color, int key) override {
    std::unique_ptr<Communicator> sub = inner_.split(color, key);
    if (!sub) return nullptr;
    std::vector<int> world = sub->allgather_value(world_[size_t(rank())]);
    Communicator& ref = *sub;
    return std::make_unique<EmulatedLinks>(ref, std::move(sub), network_, nic_, std::move(world));
  }

 private:
  LinkModel link_to(int peer) const { return network_->link(world_[size_t(rank())], world_[size_t(peer)]); }
  LinkModel link_from(int peer) const { return network_->link(world_[size_t(peer)], world_[size_t(rank())]); }
  // The ring's time for a collective that moves `passes` x (n-1)/n x `bytes` through each link.
  Clock::time_point ring_cost(int passes, double bytes) {
    const int n = size();
    if (n <= 1) return Clock::now();
    const double moved = passes * bytes * (n - 1) / n;
    return nic_->collective(moved, slowest_, passes * (n - 1) * slowest_.latency_seconds());
  }

  std::unique_ptr<Communicator> owned_;  // a split's communicator; empty for the one first wrapped
  Communicator& inner_;
  std::shared_ptr<const Network> network_;
  std::shared_ptr<Interface> nic_;
  std::vector<int> world_;
  LinkModel slowest_;
  std::mutex pairs_;  // a bulk message's header and payload are posted as a pair
};

std::unique_ptr<Communicator> wrap(Communicator& inner, std::shared_ptr<const Network> network) {
  std::vector<int> world(size_t(inner.size()));
  for (size_t r = 0; r < world.size(); ++r) world[r] = int(r);
  const double line = network->fastest(inner.rank());
  return std::make_unique<EmulatedLinks>(inner, nullptr, std::move(network), std::make_shared<Interface>(line),
                                         std::move(world));
}

}  // namespace

std::unique_ptr<Communicator> emulate_links(Communicator& inner, const LinkModel& link) {
  return wrap(inner, std::make_shared<const Network>(link));
}

std::unique_ptr<Communicator> emulate_links(Communicator& inner, LinkMatrix links) {
  DP_CHECK(links.ranks == inner.size() && links.links.size() == size_t(links.ranks) * size_t(links.ranks),
           "emulate_links: a link matrix of " + std::to_string(links.ranks) + " ranks for a communicator of " +
               std::to_string(inner.size()));
  for (int a = 0; a < links.ranks; ++a)
    for (int b = 0; b < links.ranks; ++b)
      DP_CHECK(a == b || (links.at(a, b).gbps >= 0 && links.at(a, b).latency_us >= 0),
               "emulate_links: negative bandwidth or latency from rank " + std::to_string(a) + " to " +
                   std::to_string(b));
  return wrap(inner, std::make_shared<const Network>(std::move(links)));
}

}  // namespace dp
