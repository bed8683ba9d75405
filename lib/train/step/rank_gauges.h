// A rank's memory as its metrics lines report it: the peak so far of its compute buffers
// (lib/core/memory_meter.h), its process's resident size now and, on GPU ranks whose machine has NVML,
// the device's memory in use and utilisation. Read at most every half second (NVML calls are not free
// on a millisecond step); between readings a step carries the last one.
#pragma once

#include <chrono>
#include <memory>

#include "lib/core/nvml_gauge.h"
#include "lib/train/metrics.h"

namespace dp {

class RankGauges {
 public:
  // gpu_index: the rank's GPU in NVML's numbering, or -1 on a CPU rank (no NVML is loaded).
  explicit RankGauges(int gpu_index);
  void fill(StepTimes& times);

 private:
  std::unique_ptr<NvmlGauge> nvml_;
  std::chrono::steady_clock::time_point last_read_{};
  double resident_bytes_ = -1;
  NvmlGauge::Reading gpu_;
};

// The process's resident size now (Linux /proc/self/statm), or -1 when it cannot be read.
double resident_bytes_now();

}  // namespace dp
