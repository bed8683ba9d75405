// Device memory helpers behind DeviceBuffer.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/memory.h"

namespace dp::cuda {

void* device_alloc(size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  DP_CUDA_CHECK(cudaMalloc(&p, bytes));
  return p;
}

void device_free(void* p) noexcept {
  if (p) (void)cudaFree(p);
}

void copy_to_device(void* dst, const void* src, size_t bytes) {
  if (bytes) DP_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}

void copy_to_host(void* dst, const void* src, size_t bytes) {
  if (bytes) DP_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}

void copy_on_device(void* dst, const void* src, size_t bytes) {
  if (bytes) DP_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
}

void fill_bytes(void* dst, int byte, size_t bytes) {
  if (bytes) DP_CUDA_CHECK(cudaMemset(dst, byte, bytes));
}

}  // namespace dp::cuda
