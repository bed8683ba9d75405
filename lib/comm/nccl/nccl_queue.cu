// CollectiveQueue over NCCL: one communicator over the bootstrap's ranks (its unique id broadcast from
// rank 0), a non-blocking stream of its own for the collectives, and events for the ordering against the
// compute stream (the legacy default stream, where every dptrain kernel runs). The host only enqueues.
//
// NCCL's reduce-scatter and all-gather need equal parts; collectives.h's layout gives the first
// count % ranks ranks one element more. An even split runs in place on the caller's buffer; otherwise the
// parts are staged, each padded to the largest, in a device scratch buffer owned by the queue.
#include <cuda_runtime.h>
#include <nccl.h>

#include <array>
#include <exception>
#include <string>

#include "lib/comm/collective_queue.h"
#include "lib/comm/collectives.h"
#include "lib/core/error.h"

namespace dp {
namespace {

void check_nccl(ncclResult_t rc, const char* call) {
  if (rc == ncclSuccess) return;
  throw RuntimeFailure(call, std::string("NCCL: ") + ncclGetErrorString(rc),
                       "check that each rank has its own GPU and that NCCL_DEBUG=WARN shows no transport error");
}

void check_cuda(cudaError_t rc, const char* call) {
  if (rc == cudaSuccess) return;
  throw RuntimeFailure(call, std::string(cudaGetErrorName(rc)) + ": " + cudaGetErrorString(rc),
                       "check that the GPU is usable (nvidia-smi)");
}

const cudaStream_t kCompute = cudaStreamLegacy;

class NcclQueue final : public CollectiveQueue {
 public:
  explicit NcclQueue(Communicator& bootstrap) : rank_(bootstrap.rank()), size_(bootstrap.size()) {
    try {
      check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
      check_cuda(cudaEventCreateWithFlags(&follow_, cudaEventDisableTiming), "cudaEventCreateWithFlags");
      for (cudaEvent_t& e : marks_)
        check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
      ncclUniqueId id{};
      if (rank_ == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
      bootstrap.broadcast(std::as_writable_bytes(std::span<ncclUniqueId>(&id, 1)), 0);
      check_nccl(ncclCommInitRank(&comm_, size_, id, rank_), "ncclCommInitRank");
    } catch (...) {
      release(/*abort=*/true);
      throw;
    }
  }
  // Unwinding from an error, the other ranks may never reach the collectives still queued: abort them
  // instead of waiting.
  ~NcclQueue() override { release(std::uncaught_exceptions() > 0); }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string describe() const override {
    int v = 0;
    ncclGetVersion(&v);
    return "NCCL " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
           std::to_string(v % 100) + " on a stream of its own";
  }

  void follow_compute() override {
    check_cuda(cudaEventRecord(follow_, kCompute), "cudaEventRecord");
    check_cuda(cudaStreamWaitEvent(stream_, follow_, 0), "cudaStreamWaitEvent");
  }
  // Marks reuse a ring of events: a mark older than the ring waits for a later point of the queue, never
  // an earlier one (and cannot deadlock: that point depends only on computation queued before the call).
  Mark mark() override {
    const Mark m = ++marks_made_;
    check_cuda(cudaEventRecord(marks_[size_t(m) % marks_.size()], stream_), "cudaEventRecord");
    return m;
  }
  void compute_wait(Mark m) override {
    if (m <= 0) return;
    check_cuda(cudaStreamWaitEvent(kCompute, marks_[size_t(m) % marks_.size()], 0), "cudaStreamWaitEvent");
  }
  void synchronize() override {
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    ncclResult_t async = ncclSuccess;
    check_nccl(ncclCommGetAsyncError(comm_, &async), "ncclCommGetAsyncError");
    check_nccl(async, "an NCCL collective");
  }

  void reduce_scatter(std::span<float> data) override {
    if (data.empty()) return;
    const size_t part = shard_range(data.size(), size_, 0).count;
    if (data.size() % size_t(size_) == 0) {
      check_nccl(ncclReduceScatter(data.data(), data.data() + size_t(rank_) * part, part, ncclFloat, ncclSum,
                                   comm_, stream_), "ncclReduceScatter");
      return;
    }
    float* staged = stage(data, part);
    float* mine_staged = staged + size_t(rank_) * part;
    check_nccl(ncclReduceScatter(staged, mine_staged, part, ncclFloat, ncclSum, comm_, stream_),
               "ncclReduceScatter");
    const ShardRange mine = shard_range(data.size(), size_, rank_);
    copy(data.data() + mine.offset, mine_staged, mine.count);
  }

  void allgather_shards(std::span<float> data) override {
    if (data.empty()) return;
    const size_t part = shard_range(data.size(), size_, 0).count;
    if (data.size() % size_t(size_) == 0) {
      check_nccl(ncclAllGather(data.data() + size_t(rank_) * part, data.data(), part, ncclFloat, comm_, stream_),
                 "ncclAllGather");
      return;
    }
    float* staged = scratch(size_t(size_) * part);
    const ShardRange mine = shard_range(data.size(), size_, rank_);
    copy(staged + size_t(rank_) * part, data.data() + mine.offset, mine.count);
    check_nccl(ncclAllGather(staged + size_t(rank_) * part, staged, part, ncclFloat, comm_, stream_),
               "ncclAllGather");
    for (int r = 0; r < size_; ++r) {
      const ShardRange theirs = shard_range(data.size(), size_, r);
      if (r != rank_) copy(data.data() + theirs.offset, staged + size_t(r) * part, theirs.count);
    }
  }

  void allreduce(std::span<float> data) override {
    if (data.empty()) return;
    check_nccl(ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat, ncclSum, comm_, stream_),
               "ncclAllReduce");
  }

 private:
  void release(bool abort) noexcept {
    if (comm_) {
      if (abort) {
        ncclCommAbort(comm_);
      } else {
        cudaStreamSynchronize(stream_);
        ncclCommDestroy(comm_);
      }
      comm_ = nullptr;
    }
    for (cudaEvent_t e : marks_)
      if (e) cudaEventDestroy(e);
    if (follow_) cudaEventDestroy(follow_);
    if (stream_) cudaStreamDestroy(stream_);
    cudaFree(scratch_);
  }

  void copy(float* dst, const float* src, size_t n) {
    if (n == 0) return;
    check_cuda(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync");
  }
  // Scratch of at least n floats. Growing waits for the queue first (the old buffer may be in use).
  float* scratch(size_t n) {
    if (n > scratch_floats_) {
      check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
      check_cuda(cudaFree(scratch_), "cudaFree");
      scratch_ = nullptr;
      scratch_floats_ = 0;
      check_cuda(cudaMalloc(&scratch_, n * sizeof(float)), "cudaMalloc");
      scratch_floats_ = n;
    }
    return scratch_;
  }
  // Every rank's part of data, each padded with zeros to `part` elements, laid out in scratch.
  float* stage(std::span<const float> data, size_t part) {
    float* staged = scratch(size_t(size_) * part);
    for (int r = 0; r < size_; ++r) {
      const ShardRange range = shard_range(data.size(), size_, r);
      float* at = staged + size_t(r) * part;
      copy(at, data.data() + range.offset, range.count);
      if (range.count < part)
        check_cuda(cudaMemsetAsync(at + range.count, 0, (part - range.count) * sizeof(float), stream_),
                   "cudaMemsetAsync");
    }
    return staged;
  }

  int rank_, size_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t follow_ = nullptr;
  std::array<cudaEvent_t, 1024> marks_{};
  Mark marks_made_ = 0;
  float* scratch_ = nullptr;
  size_t scratch_floats_ = 0;
};

}  // namespace

std::unique_ptr<CollectiveQueue> make_nccl_queue(Communicator& bootstrap) {
  return std::make_unique<NcclQueue>(bootstrap);
}

}  // namespace dp
