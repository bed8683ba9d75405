// probe_links: rank 0 hands each pair of ranks its turn, the pair ping-pongs, the others sleep; then the
// round trips are summed into one matrix on every rank and turned into latencies and bandwidths (see
// link_probe.h). Then the result's text forms.
#include "lib/comm/link_probe.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include "lib/core/error.h"

namespace dp {
namespace {

using Clock = std::chrono::steady_clock;

enum Tag : int {
  kGo = kLinkProbeTag,  // rank 0 -> a rank of the next pair: your turn
  kDone,                // a rank of the pair -> rank 0: finished
  kFinished,            // rank 0 -> everyone: every pair is measured
  kPing,                // the small message there and back
  kPong,
  kBulk,                // the large message there, answered by a small one
  kAck,
};
static_assert(kAck < kCollectiveTag);

// Waits for `r` asleep between polls: a rank waiting for its turn leaves its core to the pair measuring
// (MPI's own wait spins).
void wait_asleep(Request r) {
  while (!r.test()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// The buffers of one rank's round trips.
struct Buffers {
  Memory small_out, small_in, bulk;
  size_t small_bytes = 0, bulk_bytes = 0;
  std::span<std::byte> small(bool in) { return {in ? small_in.get() : small_out.get(), small_bytes}; }
  std::span<std::byte> large() { return {bulk.get(), bulk_bytes}; }
};

// `repetitions` timed round trips (after `warmup` untimed ones) from this rank to `peer`: `there` bytes
// on tag `there_tag`, answered by the small message on `back_tag`. The median, in seconds.
double time_round_trips(Communicator& comm, int peer, std::span<std::byte> there, int there_tag, int back_tag,
                        Buffers& buf, int warmup, int repetitions) {
  std::vector<double> times;
  for (int i = 0; i < warmup + repetitions; ++i) {
    const auto t0 = Clock::now();
    Request answer = comm.irecv(buf.small(true), peer, back_tag);
    comm.isend(there, peer, there_tag).wait();
    answer.wait();
    if (i >= warmup) times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return median(std::move(times));
}

// The other side of time_round_trips: receives and answers each message.
void answer_round_trips(Communicator& comm, int peer, std::span<std::byte> there, int there_tag, int back_tag,
                        Buffers& buf, int count) {
  for (int i = 0; i < count; ++i) {
    comm.irecv(there, peer, there_tag).wait();
    comm.isend(buf.small(false), peer, back_tag).wait();
  }
}

// The median round trips of the pair (a, b), a < b, as this rank (a or b) measures them: a the small
// and the a -> b bulk round trip, b the b -> a bulk round trip. {small, bulk}; 0 for what it does not time.
std::pair<double, double> measure_pair(Communicator& comm, int a, int b, Buffers& buf, const LinkProbeConfig& c) {
  const bool first = comm.rank() == a;
  const int peer = first ? b : a;
  const int small_count = c.warmup + c.latency_repetitions, bulk_count = c.warmup + c.bandwidth_repetitions;
  double small = 0, bulk = 0;
  if (first) {  // latency, then a -> b
    small = time_round_trips(comm, peer, buf.small(false), kPing, kPong, buf, c.warmup, c.latency_repetitions);
    bulk = time_round_trips(comm, peer, buf.large(), kBulk, kAck, buf, c.warmup, c.bandwidth_repetitions);
    answer_round_trips(comm, peer, buf.large(), kBulk, kAck, buf, bulk_count);  // b -> a
  } else {
    answer_round_trips(comm, peer, buf.small(true), kPing, kPong, buf, small_count);
    answer_round_trips(comm, peer, buf.large(), kBulk, kAck, buf, bulk_count);
    bulk = time_round_trips(comm, peer, buf.large(), kBulk, kAck, buf, c.warmup, c.bandwidth_repetitions);
  }
  return {small, bulk};
}

}  // namespace

LinkProbeResult probe_links(Communicator& comm, const LinkProbeConfig& config) {
  DP_CHECK(config.latency_bytes > 0 && config.bandwidth_bytes > config.latency_bytes &&
               config.latency_repetitions > 0 && config.bandwidth_repetitions > 0 && config.warmup >= 0,
           "probe_links: sizes and repetitions must be positive, the bulk message larger than the small one");
  const int n = comm.size(), me = comm.rank();
  const size_t cells = size_t(n) * size_t(n);
  Buffers buf;
  buf.small_bytes = config.latency_bytes;
  buf.bulk_bytes = config.bandwidth_bytes;
  buf.small_out = comm.allocate(buf.small_bytes);
  buf.small_in = comm.allocate(buf.small_bytes);
  buf.bulk = comm.allocate(buf.bulk_bytes);
  std::fill_n(buf.small_out.get(), buf.small_bytes, std::byte{1});
  std::fill_n(buf.bulk.get(), buf.bulk_bytes, std::byte{2});

  // Round trips as measured here: [small a->b->a | bulk from->to->from], each ranks x ranks.
  std::vector<double> rtt(2 * cells, 0.0);
  int token = 0;
  const auto token_bytes = [&token] { return std::as_writable_bytes(std::span<int>(&token, 1)); };
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      const bool in_pair = me == a || me == b;
      if (me == 0) {  // the pair's turn: tell its ranks (rank 0 needs no message to itself)
        for (int r : {a, b})
          if (r != 0) comm.isend(token_bytes(), r, kGo).wait();
      } else if (in_pair) {
        wait_asleep(comm.irecv(token_bytes(), 0, kGo));
      }
      if (in_pair) {
        const auto [small, bulk] = measure_pair(comm, a, b, buf, config);
        if (me == a) {
          rtt[size_t(a) * n + b] = small;
          rtt[cells + size_t(a) * n + b] = bulk;
        } else {
          rtt[cells + size_t(b) * n + a] = bulk;
        }
        if (me != 0) comm.isend(token_bytes(), 0, kDone).wait();
      }
      if (me == 0)
        for (int r : {a, b})
          if (r != 0) wait_asleep(comm.irecv(token_bytes(), r, kDone));
    }
  // Everyone sleeps until the last pair is done (a rank spinning in the sum would take a core from it).
  if (me == 0) {
    for (int r = 1; r < n; ++r) comm.isend(token_bytes(), r, kFinished).wait();
  } else {
    wait_asleep(comm.irecv(token_bytes(), 0, kFinished));
  }
  comm.allreduce_sum(std::span<double>(rtt));  // each entry was measured by one rank, 0 elsewhere

  LinkProbeResult result;
  result.ranks = n;
  result.gbps.assign(cells, 0.0);
  result.latency_us.assign(cells, 0.0);
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      const double small = rtt[size_t(a) * n + b];
      result.latency_us[size_t(a) * n + b] = result.latency_us[size_t(b) * n + a] = small / 2 * 1e6;
      for (auto [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
        // bytes / (one-way - latency) = bytes / ((bulk - small / 2) - small / 2). The latency taken off is
        // at most half the bulk round trip: more means the small messages were delayed (a busy machine)
        // and the difference would say little but noise.
        const double bulk = rtt[cells + size_t(from) * n + to];
        const double seconds = bulk - std::min(small, bulk / 2);
        result.gbps[size_t(from) * n + to] = seconds > 0 ? double(config.bandwidth_bytes) * 8 / seconds / 1e9 : 0;
      }
    }
  return result;
}

namespace {

std::string table(const LinkProbeResult& r, const std::vector<double>& m, const char* title) {
  std::string t = fmt::format("# {} (row: from, column: to)\n#{:>8}", title, "from\\to");
  for (int b = 0; b < r.ranks; ++b) t += fmt::format(" {:>9}", b);
  t += '\n';
  for (int a = 0; a < r.ranks; ++a) {
    t += fmt::format(" {:>8}", a);
    for (int b = 0; b < r.ranks; ++b)
      t += a == b ? fmt::format(" {:>9}", "-") : fmt::format(" {:>9.4g}", m[size_t(a) * size_t(r.ranks) + size_t(b)]);
    t += '\n';
  }
  return t;
}

// A TOML array of floats, a row of the matrix per line.
std::string toml_rows(const std::vector<double>& m, int n) {
  std::string t = "[\n";
  for (int a = 0; a < n; ++a) {
    t += "  ";
    for (int b = 0; b < n; ++b)
      t += fmt::format("{:#.6g}{}", m[size_t(a) * size_t(n) + size_t(b)], b + 1 < n ? ", " : "");
    t += a + 1 < n ? ",\n" : "\n";
  }
  return t + "]\n";
}

}  // namespace

std::string link_matrices_text(const LinkProbeResult& r) {
  return table(r, r.gbps, "bandwidth, Gbit/s each way") + table(r, r.latency_us, "latency, microseconds one way");
}

std::string link_json_lines(const LinkProbeResult& r) {
  std::string t;
  for (int a = 0; a < r.ranks; ++a)
    for (int b = 0; b < r.ranks; ++b)
      if (a != b)
        t += fmt::format(R"({{"measure": "link", "from": {}, "to": {}, "gbps": {:.6g}, "latency_us": {:.6g}}})" "\n", a,
                         b, r.gbps_at(a, b), r.latency_at(a, b));
  return t;
}

namespace {

// "[cluster]\nnode_sizes = [...]" with a comment naming the hosts, when the ranks span more than one host
// and each host's ranks are consecutive (what node_sizes can say); "" otherwise.
std::string nodes_table(const std::vector<std::string>& hosts) {
  std::vector<std::pair<std::string, int64_t>> runs;  // (host, ranks) in rank order
  for (const std::string& h : hosts) {
    if (!runs.empty() && runs.back().first == h) {
      ++runs.back().second;
      continue;
    }
    for (const auto& run : runs)
      if (run.first == h) return {};  // a host whose ranks are not consecutive
    runs.push_back({h, 1});
  }
  if (runs.size() < 2) return {};
  std::vector<std::string> names;
  std::vector<int64_t> sizes;
  for (const auto& [h, n] : runs) names.push_back(h), sizes.push_back(n);
  return fmt::format("# nodes, in rank order: {}\n[cluster]\nnode_sizes = [{}]\n", fmt::join(names, ", "),
                     fmt::join(sizes, ", "));
}

}  // namespace

std::string link_cluster_file(const LinkProbeResult& r, const std::vector<std::string>& comment,
                              const std::vector<std::string>& hosts) {
  std::vector<double> gbps = r.gbps;
  const size_t n = size_t(r.ranks);
  for (size_t a = 0; a < n; ++a) {  // the diagonal: the rank's fastest link (1 when it has none)
    double fastest = 0;
    for (size_t b = 0; b < n; ++b) fastest = std::max(fastest, a == b ? 0.0 : gbps[a * n + b]);
    gbps[a * n + a] = fastest > 0 ? fastest : 1.0;
  }
  std::string t;
  for (const std::string& line : comment) t += "# " + line + "\n";
  return t + nodes_table(hosts) + "[cluster.links]\ngbps = " + toml_rows(gbps, r.ranks) +
         "latency_us = " + toml_rows(r.latency_us, r.ranks);
}

}  // namespace dp
