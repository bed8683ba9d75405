// Compute backends compiled into this build and whether each can be used on this machine.
#pragma once

#include <string>

namespace dp {

struct BackendReport {
  bool cuda_built = false;   // the CUDA backend is compiled in
  int cuda_devices = 0;      // usable GPUs (0 when the driver or device is missing)
  std::string cuda_status;   // "2 devices", or why none is usable
};

// Probes the CUDA runtime when built in; any error counts as "no GPU".
BackendReport probe_backends();
// "cpu (OpenBLAS x.y.z), cuda (built; ...)" for --version and logs.
std::string describe_backends(const BackendReport& report);

}  // namespace dp
