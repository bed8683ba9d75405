// Reduce-scatter from the transport's own collectives: the transport's allreduce into a scratch buffer,
// then this rank's shard copied out. Moves more data than a true reduce-scatter; a baseline only.
#include "lib/comm/algorithms.h"

namespace dp::algo {

template <class T>
void native_reduce_scatter(Communicator& comm, std::span<const T> in, std::span<T> shard,
                           const ShardPiece& on_piece) {
  const ShardRange mine = shard_range(in.size(), comm.size(), comm.rank());
  Memory scratch = comm.allocate(in.size() * sizeof(T));
  const std::span<T> sum(reinterpret_cast<T*>(scratch.get()), in.size());
  comm.allreduce_sum(in, sum);
  copy_elements(comm, shard.data(), sum.data() + mine.offset, mine.count);
  if (on_piece && mine.count > 0) on_piece(mine.offset, mine.count);
}

template void native_reduce_scatter<float>(Communicator&, std::span<const float>, std::span<float>,
                                           const ShardPiece&);
template void native_reduce_scatter<double>(Communicator&, std::span<const double>, std::span<double>,
                                            const ShardPiece&);

}  // namespace dp::algo
