// The one place that branches on DPTRAIN_WITH_CUDA (set by cmake/Backends.cmake).
#include "lib/core/backend.h"

#include <fmt/format.h>

#if DPTRAIN_WITH_CUDA
#include "kernels/cuda/device.h"
#endif

namespace dp {

BackendReport probe_backends() {
  BackendReport r;
#if DPTRAIN_WITH_CUDA
  r.cuda_built = true;
  const cuda::DeviceQuery q = cuda::query_devices();
  r.cuda_devices = q.count;
  r.cuda_status = q.count > 0 ? fmt::format("{} device(s), first: {}", q.count, q.first_name)
                              : fmt::format("no usable GPU: {}", q.error);
#else
  r.cuda_status = "not built";
#endif
  return r;
}

Device resolve_device(const std::string& requested, const BackendReport& r) {
  if (requested == "cpu") return {"cpu", "requested"};
  if (r.cuda_devices > 0) return {"cpu", "auto: GPU training is not built yet"};
  return {"cpu", "auto: " + r.cuda_status};
}

std::string describe_backends(const BackendReport& r) {
  return fmt::format("cpu (OpenBLAS), cuda ({}{})", r.cuda_built ? "built; " : "", r.cuda_status);
}

}  // namespace dp
