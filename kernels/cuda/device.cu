// CUDA device discovery: any runtime error (no driver, insufficient driver, no device) means "no GPU".
#include "kernels/cuda/device.h"

#include <cuda_runtime.h>

namespace dp::cuda {

DeviceQuery query_devices() {
  DeviceQuery q;
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    q.error = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
    return q;
  }
  if (n == 0) {
    q.error = "the CUDA runtime reports no device";
    return q;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) q.first_name = prop.name;
  q.count = n;
  return q;
}

}  // namespace dp::cuda
