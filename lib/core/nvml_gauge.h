// A GPU's memory in use and utilisation through NVML, loaded at run time (dlopen "libnvidia-ml.so.1"):
// no link-time dependency, so a machine without the NVIDIA driver needs nothing and simply has no gauge.
#pragma once

namespace dp {

class NvmlGauge {
 public:
  // Loads NVML and opens device `index` (NVML's numbering); any failure leaves the gauge unavailable.
  explicit NvmlGauge(int index);
  ~NvmlGauge();
  NvmlGauge(const NvmlGauge&) = delete;
  NvmlGauge& operator=(const NvmlGauge&) = delete;

  bool available() const { return device_ != nullptr; }
  struct Reading {
    double used_bytes = -1, util_percent = -1;  // -1: not read (unavailable, or the call failed)
  };
  Reading read() const;

 private:
  void* library_ = nullptr;  // dlopen handle
  void* device_ = nullptr;   // nvmlDevice_t
  void* get_memory_ = nullptr;
  void* get_utilisation_ = nullptr;
  void* shutdown_ = nullptr;
};

}  // namespace dp
