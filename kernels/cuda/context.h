// Process-wide state of the CUDA backend: library handles (created on first use), GEMM precision, and
// whole-device synchronisation. Plain C++ header (no CUDA types). All kernels run on the default stream
// of device 0 (the current device), from one host thread at a time.
#pragma once

#include <string>

namespace dp::cuda {

// Waits for all queued device work; throws dp::RuntimeFailure with the first asynchronous error.
void synchronize();

// fp32 GEMMs (cuBLAS) use plain fp32 FMA arithmetic by default. allow_tf32(true) lets cuBLAS use the
// tensor cores' TF32 mode (about 3e-4 relative error instead of 1e-6); convolutions always use fp32 FMA.
void allow_tf32(bool allowed);
bool tf32_allowed();

// "cuBLAS 130100, CUDA runtime 13000, driver 13000": the versions actually loaded (cuDNN's: conv.h).
std::string library_versions();

}  // namespace dp::cuda
