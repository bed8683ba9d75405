// The one place that branches on DPTRAIN_WITH_CUDA and DPTRAIN_WITH_NCCL (set by cmake/Backends.cmake).
#include "lib/core/backend.h"

#include <fmt/format.h>

#include "lib/core/error.h"

#if DPTRAIN_WITH_CUDA
#include "kernels/cuda/context.h"
#include "kernels/cuda/device.h"
#include "kernels/kernel_table.h"
#endif

namespace dp {

BackendReport probe_backends() {
  BackendReport r;
#if DPTRAIN_WITH_CUDA
  r.cuda_built = true;
#if DPTRAIN_WITH_NCCL
  r.nccl_built = true;
#endif
  const cuda::DeviceQuery q = cuda::query_devices();
  r.cuda_devices = q.count;
  r.cuda_status = q.count > 0 ? fmt::format("{} device(s), first: {}", q.count, q.first_name)
                              : fmt::format("no usable GPU: {}", q.error);
#else
  r.cuda_status = "not built";
#endif
  return r;
}

std::string device_name(DeviceKind kind) { return kind == DeviceKind::cuda ? "cuda" : "cpu"; }

Device resolve_device(std::optional<DeviceKind> requested, const BackendReport& r) {
  if (requested == DeviceKind::cpu) return {DeviceKind::cpu, "requested"};
  if (requested == DeviceKind::cuda) {
    if (r.cuda_devices > 0) return {DeviceKind::cuda, "requested; " + r.cuda_status};
    throw JobError("[train] device",
                   "device = \"cuda\" but " +
                       (r.cuda_built ? r.cuda_status : std::string("this dptrain was built without the CUDA backend")),
                   "use device = \"auto\" or \"cpu\"");
  }
  if (r.cuda_devices > 0) return {DeviceKind::cuda, "auto: " + r.cuda_status};
  return {DeviceKind::cpu, "auto: " + (r.cuda_built ? r.cuda_status : std::string("CUDA backend not built"))};
}

std::string describe_backends(const BackendReport& r) {
  return fmt::format("cpu (OpenBLAS), cuda ({}{}{})", r.cuda_built ? "built; " : "",
                     r.nccl_built ? "NCCL; " : "", r.cuda_status);
}

const Kernels* cuda_kernel_table() {
#if DPTRAIN_WITH_CUDA
  return &cuda_kernels();
#else
  return nullptr;
#endif
}

void use_cuda_device(int index, bool bf16_gemms) {
#if DPTRAIN_WITH_CUDA
  cuda::set_device(index);
  cuda::set_gemm_math(bf16_gemms ? cuda::GemmMath::bf16 : cuda::GemmMath::fp32);
#else
  (void)index;
  (void)bf16_gemms;
  throw RuntimeFailure("use_cuda_device", "this dptrain was built without the CUDA backend",
                       "rebuild with -DDPTRAIN_WITH_CUDA=ON or train with device = \"cpu\"");
#endif
}

}  // namespace dp
