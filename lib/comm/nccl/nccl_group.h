// GPU data parallelism's gradient reduction: one rank per GPU, an NCCL communicator over all ranks whose
// unique id travels through the bootstrap communicator (MPI), sums computed on the devices. Built only
// with NCCL (cmake/Backends.cmake picks nccl_group.cu or nccl_unavailable.cpp).
#pragma once

#include <memory>
#include <span>
#include <string>

#include "lib/comm/communicator.h"

namespace dp {

class NcclGroup {
 public:
  virtual ~NcclGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // In-place sum over all ranks of a device buffer, ordered after the work already queued on the default
  // stream; returns when the sum is complete.
  virtual void allreduce_sum(std::span<float> device_data) = 0;
  // "NCCL 2.28.3"
  virtual std::string version() const = 0;
};

// Collective over all ranks of `bootstrap`; each rank's current CUDA device must already be chosen
// (use_cuda_device). Throws RuntimeFailure when NCCL is not built in or cannot start.
std::unique_ptr<NcclGroup> make_nccl_group(Communicator& bootstrap);

}  // namespace dp
