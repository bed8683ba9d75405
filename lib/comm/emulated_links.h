// Emulated network links ([cluster.emulate] link_gbps, link_latency_us, or as_described): a Communicator
// that wraps another and makes every transfer take at least as long as it would on links of the given
// bandwidth and latency, by sleeping, so the emulated network costs no CPU (as a NIC's DMA costs none).
// Ranks on one machine then behave like ranks of a cluster: communication can hide behind computation,
// which on shared memory (where the receiving CPU copies every byte) it cannot.
//
// Model: every process has one network interface, full duplex, shared by all its communicators
// (split() keeps it): an outgoing and an incoming direction, each a queue. The link between two ranks
// has a bandwidth and a one-way latency: the same for every pair (LinkModel), or per ordered pair of the
// ranks of the communicator first wrapped, its world (LinkMatrix; a split's communicator maps its ranks
// back to world ranks, gathered when it is made, so sub-communicators find the same links). An interface's
// line runs at its rank's fastest link; behind it, each direction has a pipe per link speed, shared by
// the flows over links of that speed (as flows share an uplink). A message of b bytes from rank s to
// rank r holds s's outgoing and r's incoming line for b / line rate and the pipe of their link's speed
// for b / bandwidth(s, r), each queued behind earlier messages there, and arrives latency(s, r) after it
// leaves: a bulk transfer to a slow peer queues behind earlier ones to slow peers, and traffic to a fast
// peer passes it (a 10 Gbit/s interface sending over a 1 Gbit/s link is busy a tenth of the time, as
// the namespace cluster's per-destination shaping measures). Messages under 64 KiB
// (control, statistics) slip in between instead of queueing behind bulk transfers, as packets interleave
// on a real network. Each side paces its own requests: a send completes when its bytes have left; every
// message carries (in a small header before it, on the same tag) the time its bytes left the sender, and
// its receive completes when they would have come in through the receiver's incoming direction from
// then (a small message: at once), plus the latency, however early or late the receive was posted (the
// time is the machine's monotonic clock, which the ranks of one machine share: emulated links are for
// ranks of one machine). A rank that computed while a message came in finds it there, as a NIC would
// have taken it in: small messages once counted their transfer from when the receiver first looked,
// which charged a pipeline of one-row micro-batches over 0.1 Gbit/s 1.3 ms per 16 KB activation on top
// of its compute (its runs 35% under the model). The transport's own collectives take at least the time of
// the bandwidth-optimal ring over the slowest link among the communicator's members (the lowest
// bandwidth and the highest latency of any pair of them):
// allreduce 2(n-1)/n * bytes / bandwidth + 2(n-1) * latency, allgather (n-1)/n * total / bandwidth +
// (n-1) * latency, broadcast bytes / bandwidth + ceil(log2 n) * latency, barrier 2 ceil(log2 n) latency.
// A collective holds the line and the pipe of its slowest link's speed.
// The real transfer still happens and the slower of the two decides; a waiting request looks at it every
// 100 us meanwhile (MPI moves a large message over shared memory in pieces, only while its ranks call
// into it), so it runs under the emulated time instead of after it. Waiting threads sleep with Linux's
// timer slack lowered to 1 us, so that latencies of tens of microseconds are not lost in oversleeping
// (a wait still overshoots by some 10-100 us on a busy VM: emulated latencies below that are not exact).
#pragma once

#include <memory>
#include <vector>

#include "lib/comm/communicator.h"

namespace dp {

struct LinkModel {
  double gbps = 0;        // bandwidth of each direction of the link, in Gbit/s; 0: not emulated
  double latency_us = 0;  // one-way latency of a message
  bool active() const { return gbps > 0 || latency_us > 0; }
  // Seconds for `bytes` to cross the link once (bandwidth only; 0 when no bandwidth is emulated).
  double transfer_seconds(double bytes) const { return gbps > 0 ? bytes * 8 / (gbps * 1e9) : 0; }
  double latency_seconds() const { return latency_us * 1e-6; }
};

// The link from every rank to every other: row-major ranks x ranks, entry a * ranks + b the link from
// rank a to rank b; the diagonal is ignored.
struct LinkMatrix {
  int ranks = 0;
  std::vector<LinkModel> links;
  const LinkModel& at(int from, int to) const { return links[size_t(from) * size_t(ranks) + size_t(to)]; }
};

// `inner` paced by `link` between every pair of ranks; `inner` must outlive the result. With an inactive
// model the wrapper only forwards.
std::unique_ptr<Communicator> emulate_links(Communicator& inner, const LinkModel& link);
// `inner` paced by a link per pair of its ranks; `links.ranks` must be inner.size() (InternalError
// otherwise), every off-diagonal bandwidth and latency at least 0.
std::unique_ptr<Communicator> emulate_links(Communicator& inner, LinkMatrix links);

}  // namespace dp
