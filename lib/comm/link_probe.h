// The link between every pair of ranks, measured, for `dptrain profile --links` and the cluster file it
// writes ([cluster.links] gbps, latency_us). Pairwise ping-pong, one pair at a time while the other ranks
// sleep (so each link is measured uncontended, and idle ranks leave the cores to the pair):
//   latency a-b      half the median round trip of a small message (latency_bytes) a -> b -> a;
//   bandwidth a -> b bandwidth_bytes / (one-way time - latency), the one-way time the median round trip
//                    of bandwidth_bytes a -> b answered by a small message, less that message's latency
//                    (what is taken off for the two latencies: at most half that round trip);
//                    b -> a the same with the roles swapped.
// Every rank of the communicator calls it with the same configuration and receives the whole result; the
// text forms below (the two matrices, JSON lines, a cluster file) print nothing themselves.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "lib/comm/communicator.h"

namespace dp {

struct LinkProbeConfig {
  size_t latency_bytes = 8;
  int latency_repetitions = 20;
  size_t bandwidth_bytes = size_t(8) << 20;
  int bandwidth_repetitions = 5;
  int warmup = 2;  // untimed round trips before each measurement
};

struct LinkProbeResult {
  int ranks = 0;
  // Row-major ranks x ranks, row `from`, column `to`; the diagonal (a rank to itself) is 0.
  std::vector<double> gbps;        // Gbit/s each way
  std::vector<double> latency_us;  // one way (the same both ways: half a round trip)
  double gbps_at(int from, int to) const { return gbps[size_t(from) * size_t(ranks) + size_t(to)]; }
  double latency_at(int from, int to) const { return latency_us[size_t(from) * size_t(ranks) + size_t(to)]; }
};

// Collective over `comm`. Uses tags from kLinkProbeTag up (below kCollectiveTag).
inline constexpr int kLinkProbeTag = 31900;
LinkProbeResult probe_links(Communicator& comm, const LinkProbeConfig& config = {});

// Two tables, rank x rank (row: from, column: to; "-" on the diagonal): bandwidth in Gbit/s, then
// one-way latency in microseconds, each under a "# " title line.
std::string link_matrices_text(const LinkProbeResult& r);
// One JSON object a line per ordered pair: {"measure": "link", "from", "to", "gbps", "latency_us"}.
std::string link_json_lines(const LinkProbeResult& r);
// A cluster file for [cluster] file = "...": `comment` lines (each prefixed "# "), then only a
// [cluster.links] table with gbps and latency_us as row-major ranks x ranks arrays; the diagonal, which a
// job ignores, holds the rank's fastest measured bandwidth and latency 0. `hosts` (each rank's host name;
// empty: not known): ranks on more than one host, each host's ranks consecutive, add a [cluster] table
// whose node_sizes holds them (a comment names the hosts), so that plans see the nodes too.
std::string link_cluster_file(const LinkProbeResult& r, const std::vector<std::string>& comment,
                              const std::vector<std::string>& hosts = {});

}  // namespace dp
