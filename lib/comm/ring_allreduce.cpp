// Ring allreduce = ring reduce-scatter (each rank ends with the complete sum of its shard, written
// straight into its shard of out) + ring all-gather of out in place. Each rank sends and receives
// 2(n-1)/n of the buffer, the minimum for an allreduce, in segments so that transfers overlap reductions.
// No copies, no scratch beyond a few received segments; in == out works as is (out's shard is the input's,
// and each other chunk of in is read before the partial sum passing through overwrites it).
#include "lib/comm/algorithms.h"

namespace dp::algo {

template <class T>
void ring_allreduce(Communicator& comm, std::span<const T> in, std::span<T> out, size_t segment_bytes) {
  const ShardRange mine = shard_range(in.size(), comm.size(), comm.rank());
  // Phase 1: reduce-scatter into this rank's shard of out; the partial sums pass through the rest of out,
  // which the all-gather overwrites.
  ring_reduce_scatter(comm, in, out.subspan(mine.offset, mine.count), segment_bytes, {}, out);
  // Phase 2: all-gather. Every shard goes round the ring into everyone's out.
  ring_allgather(comm, out, segment_bytes);
}

template void ring_allreduce<float>(Communicator&, std::span<const float>, std::span<float>, size_t);
template void ring_allreduce<double>(Communicator&, std::span<const double>, std::span<double>, size_t);

}  // namespace dp::algo
