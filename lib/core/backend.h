// Compute backends compiled into this build, whether each can be used on this machine, and the device a
// run trains on.
#pragma once

#include <optional>
#include <string>

namespace dp {

struct Kernels;  // kernels/kernel_table.h

struct BackendReport {
  bool cuda_built = false;   // the CUDA backend is compiled in
  bool nccl_built = false;   // and NCCL with it (multi-GPU data parallelism)
  int cuda_devices = 0;      // usable GPUs (0 when the driver or device is missing)
  std::string cuda_status;   // "2 devices", or why none is usable
};

enum class DeviceKind { cpu, cuda };
// "cpu" | "cuda"
std::string device_name(DeviceKind kind);

// The device a run computes on, and why.
struct Device {
  DeviceKind kind = DeviceKind::cpu;
  std::string reason;  // "requested", or why auto chose it
  std::string describe() const { return device_name(kind) + " (" + reason + ")"; }
};

// Resolves [train] device (a kind, or nullopt for "auto") against what this machine offers: "auto" takes
// a GPU when one is usable and the CPU otherwise, saying why. Throws JobError for cuda without a usable GPU.
Device resolve_device(std::optional<DeviceKind> requested, const BackendReport& report);

// Probes the CUDA runtime when built in; any error counts as "no GPU".
BackendReport probe_backends();
// "cpu (OpenBLAS x.y.z), cuda (built; ...)" for --version and logs.
std::string describe_backends(const BackendReport& report);

// The CUDA kernel table, or nullptr when the CUDA backend is not built.
const Kernels* cuda_kernel_table();
// Makes GPU `index` this process's device and sets the GEMM arithmetic (bf16 tensor cores or fp32).
// Throws RuntimeFailure when the CUDA backend is not built or the device cannot be used.
void use_cuda_device(int index, bool bf16_gemms);

}  // namespace dp
