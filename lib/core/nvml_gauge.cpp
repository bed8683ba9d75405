// NvmlGauge: the few NVML entry points it needs, declared here (NVML's header is not in the CUDA
// toolkit of these machines) with the types of NVML's documented API.
#include "lib/core/nvml_gauge.h"

#include <dlfcn.h>

namespace dp {
namespace {

using nvmlReturn_t = int;  // NVML_SUCCESS = 0
using nvmlDevice_t = void*;
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlUtilization_t {
  unsigned int gpu, memory;  // percent of the last sample period
};
using InitFn = nvmlReturn_t (*)();
using HandleFn = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
using MemoryFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*);
using UtilisationFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlUtilization_t*);
using ShutdownFn = nvmlReturn_t (*)();

}  // namespace

NvmlGauge::NvmlGauge(int index) {
  if (index < 0) return;
  library_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library_) return;
  const auto init = reinterpret_cast<InitFn>(dlsym(library_, "nvmlInit_v2"));
  const auto handle = reinterpret_cast<HandleFn>(dlsym(library_, "nvmlDeviceGetHandleByIndex_v2"));
  get_memory_ = dlsym(library_, "nvmlDeviceGetMemoryInfo");
  get_utilisation_ = dlsym(library_, "nvmlDeviceGetUtilizationRates");
  shutdown_ = dlsym(library_, "nvmlShutdown");
  nvmlDevice_t device = nullptr;
  if (!init || !handle || !get_memory_ || !get_utilisation_ || !shutdown_ || init() != 0) {
    dlclose(library_);
    library_ = nullptr;
    return;
  }
  if (handle(unsigned(index), &device) == 0) device_ = device;
}

NvmlGauge::~NvmlGauge() {
  if (!library_) return;
  reinterpret_cast<ShutdownFn>(shutdown_)();
  dlclose(library_);
}

NvmlGauge::Reading NvmlGauge::read() const {
  Reading r;
  if (!device_) return r;
  nvmlMemory_t memory{};
  if (reinterpret_cast<MemoryFn>(get_memory_)(device_, &memory) == 0) r.used_bytes = double(memory.used);
  nvmlUtilization_t use{};
  if (reinterpret_cast<UtilisationFn>(get_utilisation_)(device_, &use) == 0) r.util_percent = double(use.gpu);
  return r;
}

}  // namespace dp
