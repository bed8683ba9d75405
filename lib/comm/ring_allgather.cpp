// Ring all-gather of shards, in place. Each rank starts with its chunk (shard_range(count, n, rank)) of
// the buffer; in n-1 steps every chunk travels once round the ring. At step s rank r sends chunk r-s to
// the right and receives chunk r-s-1 from the left, straight into its place in the buffer (no scratch, no
// copies), and forwards it at step s+1 segment by segment as the segments arrive.
#include "lib/comm/algorithms.h"

namespace dp::algo {

template <class T>
void ring_allgather(Communicator& comm, std::span<T> data, size_t segment_bytes) {
  const Ring ring(comm);
  if (ring.n == 1) return;
  const size_t count = data.size();
  const size_t max = segment_elements<T>(segment_bytes);

  // What this rank receives, in order: at step s the segments of chunk r-s-1 (the left neighbour's chunk
  // (r-1)-s, which it sends at its step s in the same order).
  std::vector<Segment> recvs;
  for (int s = 0; s + 1 < ring.n; ++s)
    append_segments(recvs, s, shard_range(count, ring.n, ring.chunk(-s - 1)), max);
  // Every receive lands in its final place, so all of them can be posted now.
  std::vector<Request> pending;
  pending.reserve(recvs.size());
  for (const Segment& g : recvs)
    pending.push_back(comm.irecv(bytes_of(data.data() + g.offset, g.count), ring.left, kTagRingGather));

  // Step 0: send this rank's own chunk to the right.
  std::vector<Segment> first;
  append_segments(first, 0, shard_range(count, ring.n, ring.rank), max);
  std::vector<Request> sends;
  for (const Segment& g : first)
    sends.push_back(comm.isend(bytes_of(data.data() + g.offset, g.count), ring.right, kTagRingGather));

  for (size_t i = 0; i < recvs.size(); ++i) {
    const Segment& g = recvs[i];
    // Wait for this segment from the left.
    pending[i].wait();
    // Forward it, unless the right neighbour is the chunk's owner (it had it from the start).
    if (g.step + 2 < ring.n)
      sends.push_back(comm.isend(bytes_of(data.data() + g.offset, g.count), ring.right, kTagRingGather));
  }
  wait_all(sends);
}

template void ring_allgather<float>(Communicator&, std::span<float>, size_t);
template void ring_allgather<double>(Communicator&, std::span<double>, size_t);

}  // namespace dp::algo
