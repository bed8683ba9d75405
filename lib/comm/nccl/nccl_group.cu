// NcclGroup over NCCL: ncclCommInitRank with an id broadcast from rank 0, ncclAllReduce on the default
// stream (where every dptrain kernel runs, so the sum sees the finished gradients).
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <string>

#include "lib/comm/nccl/nccl_group.h"
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

class Nccl final : public NcclGroup {
 public:
  explicit Nccl(Communicator& bootstrap) : rank_(bootstrap.rank()), size_(bootstrap.size()) {
    ncclUniqueId id{};
    if (rank_ == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    bootstrap.broadcast(std::as_writable_bytes(std::span<ncclUniqueId>(&id, 1)), 0);
    check_nccl(ncclCommInitRank(&comm_, size_, id, rank_), "ncclCommInitRank");
  }
  ~Nccl() override { ncclCommDestroy(comm_); }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void allreduce_sum(std::span<float> data) override {
    if (data.empty()) return;
    check_nccl(ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat, ncclSum, comm_, nullptr),
               "ncclAllReduce");
    check_cuda(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
  }

  std::string version() const override {
    int v = 0;
    ncclGetVersion(&v);
    return "NCCL " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
           std::to_string(v % 100);
  }

 private:
  int rank_, size_;
  ncclComm_t comm_ = nullptr;
};

}  // namespace

std::unique_ptr<NcclGroup> make_nccl_group(Communicator& bootstrap) { return std::make_unique<Nccl>(bootstrap); }

}  // namespace dp
