// The transport's own allreduce (MPI_Allreduce; the thread transport's reduce-at-rank-0): the baseline
// the ring is measured against.
#include "lib/comm/algorithms.h"

namespace dp::algo {

template <class T>
void native_allreduce(Communicator& comm, std::span<const T> in, std::span<T> out) {
  comm.allreduce_sum(in, out);
}

template void native_allreduce<float>(Communicator&, std::span<const float>, std::span<float>);
template void native_allreduce<double>(Communicator&, std::span<const double>, std::span<double>);

}  // namespace dp::algo
