// Compute backends compiled into this build and whether each can be used on this machine.
#pragma once

#include <string>

namespace dp {

struct BackendReport {
  bool cuda_built = false;   // the CUDA backend is compiled in
  int cuda_devices = 0;      // usable GPUs (0 when the driver or device is missing)
  std::string cuda_status;   // "2 devices", or why none is usable
};

// The device a run computes on, and why.
struct Device {
  std::string kind;    // "cpu"
  std::string reason;  // "requested", or why auto chose it
  std::string describe() const { return kind + " (" + reason + ")"; }
};

// Resolves [train] device ("auto" | "cpu") against what this machine offers. Training kernels exist for
// the CPU only so far: "auto" picks the CPU and says why.
Device resolve_device(const std::string& requested, const BackendReport& report);

// Probes the CUDA runtime when built in; any error counts as "no GPU".
BackendReport probe_backends();
// "cpu (OpenBLAS x.y.z), cuda (built; ...)" for --version and logs.
std::string describe_backends(const BackendReport& report);

}  // namespace dp
