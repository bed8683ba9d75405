// make_nccl_queue for builds without NCCL (cmake/Backends.cmake compiles this instead of nccl_queue.cu).
#include "lib/comm/collective_queue.h"
#include "lib/core/error.h"

namespace dp {

std::unique_ptr<CollectiveQueue> make_nccl_queue(Communicator&) {
  throw RuntimeFailure("make_nccl_queue", "this dptrain was built without NCCL, so it cannot train on several GPUs",
                       "rebuild with NCCL next to the CUDA toolkit, or run one rank per job on the GPU");
}

}  // namespace dp
