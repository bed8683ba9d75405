// RankGauges: the memory fields of a rank's train lines (metrics.jsonl).
#include "lib/train/step/rank_gauges.h"

#include <unistd.h>

#include <cstdio>

#include "lib/core/memory_meter.h"

namespace dp {

double resident_bytes_now() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return -1;
  long long size = 0, resident = 0;
  const int fields = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  return fields == 2 ? double(resident) * double(sysconf(_SC_PAGESIZE)) : -1;
}

RankGauges::RankGauges(int gpu_index) {
  if (gpu_index >= 0) nvml_ = std::make_unique<NvmlGauge>(gpu_index);
}

void RankGauges::fill(StepTimes& times) {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_read_ >= std::chrono::milliseconds(500)) {
    last_read_ = now;
    resident_bytes_ = resident_bytes_now();
    if (nvml_) gpu_ = nvml_->read();
  }
  times.allocated_peak_bytes = double(MemoryMeter::process().peak());
  times.resident_bytes = resident_bytes_;
  times.gpu_used_bytes = gpu_.used_bytes;
  times.gpu_util_percent = gpu_.util_percent;
}

}  // namespace dp
