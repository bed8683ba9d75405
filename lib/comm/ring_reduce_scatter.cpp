// Ring reduce-scatter. The buffer is cut into n chunks (chunk c = shard_range(count, n, c)); in n-1 steps
// each chunk's partial sum travels once round the ring, gaining one rank's input per hop, and ends
// complete at its owner. At step s rank r sends chunk r-s-1 to the right and receives chunk r-s-2 from the
// left, so after the last step (s = n-2) it holds chunk r: its shard.
//
// Pipelining: every chunk is cut into K segments, and the ring runs segment by segment (unit (k, s) is
// segment k at step s), so a segment's partial sum is passed on as soon as it is reduced while the next
// one is in flight, and each reduction works on a segment still hot in cache (a few segment-sized scratch
// slots, reused round-robin). The sum of chunk c is formed in the fixed order ((x[c+1] + x[c+2]) + ...)
// + x[c], so results are reproducible for a given rank count.
#include "lib/comm/algorithms.h"

namespace dp::algo {

template <class T>
void ring_reduce_scatter(Communicator& comm, std::span<const T> in, std::span<T> shard,
                         size_t segment_bytes, const ShardPiece& on_piece) {
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
  // still sent, so that all ranks run the same schedule of units.
  const size_t segments = (largest + max - 1) / max;
  const size_t units = segments * steps;
  auto piece = [&](int chunk, size_t k) { return segment_of(shard_range(count, ring.n, chunk), k, max); };

  // Step 0 of every segment: this rank's own input of chunk r-1 goes to the right as it is.
  std::vector<Request> input_sends;
  for (size_t k = 0; k < segments; ++k) {
    const Segment g = piece(ring.chunk(-1), k);
    input_sends.push_back(comm.isend(bytes_of(in.data() + g.offset, g.count), ring.right, kTagRingInput));
  }

  // Scratch slots: the receive of unit u is posted kAhead units early into slot u % kSlots. A slot is
  // reused only once the partial sum it passed on has left; that send feeds the right neighbour's unit
  // u+1, whose receive it posted kAhead units before, so no rank can wait on a slower one for long.
  constexpr size_t kAhead = 2, kSlots = 4;
  T* scratch = reinterpret_cast<T*>(comm.workspace(kSlots * max * sizeof(T)));
  auto slot = [&](size_t u) { return scratch + (u % kSlots) * max; };
  Request slot_recv[kSlots], slot_send[kSlots];
  auto post_recv = [&](size_t u) {
    const size_t s = u % steps;
    const Segment g = piece(ring.chunk(-int(s) - 2), u / steps);
    slot_send[u % kSlots].wait();
    slot_recv[u % kSlots] = comm.irecv(bytes_of(slot(u), g.count), ring.left,
                                       s == 0 ? kTagRingInput : kTagRingPartial);
  };
  for (size_t u = 0; u < std::min(kAhead, units); ++u) post_recv(u);

  for (size_t u = 0; u < units; ++u) {
    const size_t s = u % steps;
    const Segment g = piece(ring.chunk(-int(s) - 2), u / steps);  // segment k = u / steps of chunk r-s-2
    T* partial = slot(u);
    // Wait for the left neighbour's partial sum of this segment (at step 0: its input).
    slot_recv[u % kSlots].wait();
    if (s + 1 < steps) {
      // Add this rank's input and pass it to the right, which continues it at step s+1.
      comm.reduce_add(partial, partial, in.data() + g.offset, g.count);
      slot_send[u % kSlots] = comm.isend(bytes_of(partial, g.count), ring.right, kTagRingPartial);
    } else {
      // Last step: with this rank's input the sum is complete; it lands in this rank's shard.
      comm.reduce_add(shard.data() + (g.offset - mine.offset), partial, in.data() + g.offset, g.count);
      if (on_piece && g.count > 0) on_piece(g.offset, g.count);  // while the sum is in cache
    }
    // Keep kAhead receives in flight.
    if (u + kAhead < units) post_recv(u + kAhead);
  }
  wait_all(input_sends);
  wait_all(slot_send);
}

template void ring_reduce_scatter<float>(Communicator&, std::span<const float>, std::span<float>, size_t,
                                         const ShardPiece&);
template void ring_reduce_scatter<double>(Communicator&, std::span<const double>, std::span<double>, size_t,
                                          const ShardPiece&);

}  // namespace dp::algo
