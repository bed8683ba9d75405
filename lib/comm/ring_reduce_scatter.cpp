// Ring reduce-scatter. The buffer is cut into n chunks (chunk c = shard_range(count, n, c)); in n-1 steps
// each chunk's partial sum travels once round the ring, gaining one rank's input per hop, and ends
// complete at its owner. At step s rank r sends chunk r-s-1 to the right and receives chunk r-s-2 from the
// left, so after the last step (s = n-2) it holds chunk r: its shard.
//
// Pipelining: every chunk is cut into K segments, and the ring runs step by step, segment by segment
// within a step (unit (s, k) is segment k at step s), so a segment's partial sum is passed on as soon as
// it is reduced while the next one is in flight, and each reduction works on a segment just received.
// Step-major, not segment-major: segment k at step s needs the left neighbour's segment k at step s-1,
// which it had K units earlier, so a rank waits on its left only when a link is what limits the ring.
// In segment-major order (k, then s) it would wait on a partial its left had just made, one round of the
// ring per segment: on a ring whose slowest link carries two segments a round, that link then idles for
// every hop's wake-up and reduction (a 16 MB allreduce over 1 Gbit/s ran at 87% of the link, now 100%).
// The sum of chunk c is formed in the fixed order ((x[c+1] + x[c+2]) + ...) + x[c], so results are
// reproducible for a given rank count.
//
// Where the partial sums wait for their send: in `through` (a buffer of in's size, which the caller
// gives up: the allreduce's out, whose other chunks its all-gather overwrites), each in its chunk's place;
// otherwise in scratch slots, a chunk's worth, which their sends hold (see below). Received segments
// land in a few small slots, reduced while still in cache.
#include "lib/comm/algorithms.h"

namespace dp::algo {

template <class T>
void ring_reduce_scatter(Communicator& comm, std::span<const T> in, std::span<T> shard, size_t segment_bytes,
                         const ShardPiece& on_piece, std::span<T> through) {
  const Ring ring(comm);
  const size_t count = in.size();
  const ShardRange mine = shard_range(count, ring.n, ring.rank);
  if (ring.n == 1) {
    copy_elements(comm, shard.data(), in.data(), count);
    if (on_piece && count > 0) on_piece(0, count);
    return;
  }
  const size_t largest = shard_range(count, ring.n, 0).count;  // chunk 0 is a largest chunk
  const size_t max = std::min(segment_elements<T>(segment_bytes), std::max<size_t>(largest, 1));
  const size_t steps = size_t(ring.n) - 1;
  // K segments per chunk, as many as the largest chunk needs; smaller chunks end with an empty segment,
  // still sent, so that all ranks run the same schedule of units. Unit u is segment u % K at step u / K.
  const size_t segments = (largest + max - 1) / max;
  const size_t units = segments * steps;
  auto piece = [&](size_t u) { return segment_of(shard_range(count, ring.n, ring.chunk(-int(u / segments) - 2)),
                                                 u % segments, max); };

  // Step 0 of every segment: this rank's own input of chunk r-1 goes to the right as it is.
  std::vector<Request> sends;
  for (size_t k = 0; k < segments; ++k) {
    const Segment g = segment_of(shard_range(count, ring.n, ring.chunk(-1)), k, max);
    sends.push_back(comm.isend(bytes_of(in.data() + g.offset, g.count), ring.right, kTagRingInput));
  }

  // Receive slots: the receive of unit u is posted kAhead units early into slot u % slots. Without
  // `through` a slot's partial sum is sent from it, and the slot is reused only once that send has left;
  // the send feeds the right neighbour's unit u + K, whose receive it posts at its unit u + K - kAhead.
  // With K + kAhead slots, a rank reusing the slot of unit u has passed unit u + K, and the right
  // neighbour needs only units up to u - kAhead of this rank to get there: no cycle of waits round the
  // ring. With `through` a slot is free once reduced: kAhead + 2 of them.
  constexpr size_t kAhead = 2;
  const bool slots_send = through.empty();
  const size_t slots = slots_send ? segments + kAhead : kAhead + 2;
  T* scratch = reinterpret_cast<T*>(comm.workspace(slots * max * sizeof(T)));
  auto slot = [&](size_t u) { return scratch + (u % slots) * max; };
  std::vector<Request> slot_recv(slots), slot_send(slots_send ? slots : 0);
  auto post_recv = [&](size_t u) {
    if (slots_send) slot_send[u % slots].wait();
    slot_recv[u % slots] = comm.irecv(bytes_of(slot(u), piece(u).count), ring.left,
                                      u < segments ? kTagRingInput : kTagRingPartial);
  };
  for (size_t u = 0; u < std::min(kAhead, units); ++u) post_recv(u);

  for (size_t u = 0; u < units; ++u) {
    const Segment g = piece(u);  // of chunk r-s-2 at step s = u / K
    T* partial = slot(u);
    // Wait for the left neighbour's partial sum of this segment (at step 0: its input).
    slot_recv[u % slots].wait();
    if (u / segments + 1 < steps) {
      // Add this rank's input and pass it to the right, which continues it at the next step.
      T* sum = slots_send ? partial : through.data() + g.offset;
      comm.reduce_add(sum, partial, in.data() + g.offset, g.count);
      Request sent = comm.isend(bytes_of(sum, g.count), ring.right, kTagRingPartial);
      if (slots_send)
        slot_send[u % slots] = std::move(sent);
      else
        sends.push_back(std::move(sent));
    } else {
      // Last step: with this rank's input the sum is complete; it lands in this rank's shard.
      comm.reduce_add(shard.data() + (g.offset - mine.offset), partial, in.data() + g.offset, g.count);
      if (on_piece && g.count > 0) on_piece(g.offset, g.count);  // while the sum is in cache
    }
    // Keep kAhead receives in flight.
    if (u + kAhead < units) post_recv(u + kAhead);
  }
  wait_all(sends);
  wait_all(slot_send);
}

template void ring_reduce_scatter<float>(Communicator&, std::span<const float>, std::span<float>, size_t,
                                         const ShardPiece&, std::span<float>);
template void ring_reduce_scatter<double>(Communicator&, std::span<const double>, std::span<double>, size_t,
                                          const ShardPiece&, std::span<double>);

}  // namespace dp::algo
