// Emulated network links ([cluster.emulate] link_gbps, link_latency_us): a Communicator that wraps
// another and makes every transfer take at least as long as it would on a link of the given bandwidth
// and latency, by sleeping, so the emulated network costs no CPU (as a NIC's DMA costs none). Ranks on
// one machine then behave like ranks of a cluster: communication can hide behind computation, which on
// shared memory (where the receiving CPU copies every byte) it cannot.
//
// Model: every process has one link, full duplex, shared by all its communicators (split() keeps it).
// A message of b bytes occupies the sender's outgoing and the receiver's incoming direction for
// b / bandwidth, queued behind earlier messages in that direction, and arrives `latency` after it
// leaves; messages under 64 KiB (control, statistics) slip in between instead of queueing behind bulk
// transfers, as packets interleave on a real network. Each side paces its own requests (no clock is
// shared): a send completes when its bytes have left, a receive when they would have arrived counting
// from when it was posted. The transport's own
// collectives take at least the time of the bandwidth-optimal ring over such links:
// allreduce 2(n-1)/n * bytes / bandwidth + 2(n-1) * latency, allgather (n-1)/n * total / bandwidth +
// (n-1) * latency, broadcast bytes / bandwidth + ceil(log2 n) * latency, barrier 2 ceil(log2 n) latency.
// The real transfer still happens and the slower of the two decides.
#pragma once

#include <memory>

#include "lib/comm/communicator.h"

namespace dp {

struct LinkModel {
  double gbps = 0;        // bandwidth of each direction of a rank's link, in Gbit/s; 0: not emulated
  double latency_us = 0;  // one-way latency of a message
  bool active() const { return gbps > 0 || latency_us > 0; }
  // Seconds for `bytes` to cross the link once (bandwidth only; 0 when no bandwidth is emulated).
  double transfer_seconds(double bytes) const { return gbps > 0 ? bytes * 8 / (gbps * 1e9) : 0; }
  double latency_seconds() const { return latency_us * 1e-6; }
};

// `inner` paced by `link`; `inner` must outlive the result. With an inactive model the wrapper only
// forwards.
std::unique_ptr<Communicator> emulate_links(Communicator& inner, const LinkModel& link);

}  // namespace dp
