// All-gather of shards from the transport's own allgather, which needs equal parts: every rank
// contributes its shard padded to the largest shard size, then the shards are copied into place.
#include "lib/comm/algorithms.h"

namespace dp::algo {

template <class T>
void native_allgather(Communicator& comm, std::span<T> data) {
  const int n = comm.size();
  const ShardRange mine = shard_range(data.size(), n, comm.rank());
  const size_t part = shard_range(data.size(), n, 0).count;  // rank 0 holds a largest shard
  Memory scratch = comm.allocate((size_t(n) + 1) * part * sizeof(T));
  T* own = reinterpret_cast<T*>(scratch.get());  // (part) this rank's shard, padded
  T* all = own + part;                           // (n, part) everyone's
  copy_elements(comm, own, data.data() + mine.offset, mine.count);
  comm.allgather(bytes_of(static_cast<const T*>(own), part), bytes_of(all, size_t(n) * part));
  for (int r = 0; r < n; ++r) {
    const ShardRange theirs = shard_range(data.size(), n, r);
    if (r == comm.rank()) continue;
    copy_elements(comm, data.data() + theirs.offset, all + size_t(r) * part, theirs.count);
  }
}

template void native_allgather<float>(Communicator&, std::span<float>);
template void native_allgather<double>(Communicator&, std::span<double>);

}  // namespace dp::algo
