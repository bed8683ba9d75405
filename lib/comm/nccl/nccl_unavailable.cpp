// make_nccl_group for builds without NCCL (cmake/Backends.cmake compiles this instead of nccl_group.cu).
#include "lib/comm/nccl/nccl_group.h"
#include "lib/core/error.h"

namespace dp {

std::unique_ptr<NcclGroup> make_nccl_group(Communicator&) {
  throw RuntimeFailure("make_nccl_group", "this dptrain was built without NCCL, so it cannot train on several GPUs",
                       "rebuild with NCCL next to the CUDA toolkit, or run one rank per job on the GPU");
}

}  // namespace dp
