// Collectives queued behind the computation instead of run by the calling thread. On GPUs the queue is a
// CUDA stream of NCCL operations (nccl/nccl_queue.cu): the host only enqueues, and the device orders
// communication after the kernels that produce its data and before the kernels that consume its results.
// On the host (host_queue.cpp) it is a thread running collectives.h's ring algorithms over any
// Communicator, in order; that is how the code written against this interface (lib/mra's queued
// synchronisation) is tested on CPUs with 1-5 ranks.
//
// Ordering, the whole contract:
//   - operations run in the order they were queued, on every rank in the same order;
//   - follow_compute(): operations queued after it start only once the computation queued so far on the
//     compute stream is done (on the host, computation is synchronous: nothing to wait for);
//   - mark() names the point reached by the queue so far; compute_wait(mark) makes the computation queued
//     after it wait for that point (on the host: the calling thread blocks until the queue is there).
// Buffers are in the compute backend's memory (device memory on GPUs) and must stay untouched by the
// computation between the operation being queued and a compute_wait past it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "lib/comm/communicator.h"

namespace dp {

class CollectiveQueue {
 public:
  using Mark = int64_t;
  virtual ~CollectiveQueue() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "NCCL 2.28.3 on a stream", "ring collectives on a host thread".
  virtual std::string describe() const = 0;

  virtual void follow_compute() = 0;
  virtual Mark mark() = 0;
  virtual void compute_wait(Mark m) = 0;

  // The sharded layout of collectives.h (shard_range): reduce_scatter leaves this rank's shard of data
  // summed over the ranks (the rest of data is scratch afterwards); allgather_shards completes data from
  // every rank's shard. allreduce sums all of data. All in place.
  virtual void reduce_scatter(std::span<float> data) = 0;
  virtual void allgather_shards(std::span<float> data) = 0;
  virtual void allreduce(std::span<float> data) = 0;

  // Blocks until everything queued so far is done; throws RuntimeFailure if anything failed.
  virtual void synchronize() = 0;
};

// Over `comm` (host memory): a communicator split from it, driven by a thread of the queue's own.
std::unique_ptr<CollectiveQueue> make_host_queue(Communicator& comm);

// NCCL over the ranks of `bootstrap` (one GPU each, already chosen with use_cuda_device), whose unique id
// travels through bootstrap. Throws RuntimeFailure when dptrain was built without NCCL or NCCL fails.
std::unique_ptr<CollectiveQueue> make_nccl_queue(Communicator& bootstrap);

}  // namespace dp
