// Ring collectives priced per phase (sim.h): in one phase every rank sends a chunk to the next; an edge
// between nodes shares its node's link with the other edges leaving (or entering) that node at once.
#include <algorithm>
#include <unordered_map>

#include "lib/sim/sim.h"

namespace dp::sim {

double ring_phase_seconds(const Cluster& c, const std::vector<int>& ring, double chunk_bytes) {
  const size_t k = ring.size();
  if (k < 2) return 0;
  std::unordered_map<int, int> out, in;  // flows leaving and entering each node
  for (size_t i = 0; i < k; ++i) {
    const int a = ring[i], b = ring[(i + 1) % k];
    if (c.rank(a).node != c.rank(b).node) ++out[c.rank(a).node], ++in[c.rank(b).node];
  }
  double slowest = 0;
  for (size_t i = 0; i < k; ++i) {
    const int a = ring[i], b = ring[(i + 1) % k];
    const Link l = c.link(a, b);
    const int na = c.rank(a).node, nb = c.rank(b).node;
    const int sharing = na == nb ? 1 : std::max(out[na], in[nb]);
    slowest = std::max(slowest, l.latency_us * 1e-6 + double(sharing) * l.bandwidth_seconds(chunk_bytes));
  }
  return slowest;
}

double ring_allreduce_seconds(const Cluster& c, const std::vector<int>& ring, double bytes) {
  const size_t k = ring.size();
  if (k < 2) return 0;
  return 2.0 * double(k - 1) * ring_phase_seconds(c, ring, bytes / double(k));
}

}  // namespace dp::sim
