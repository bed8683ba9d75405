// Process-wide state of the CUDA backend: library handles (created on first use), GEMM precision, and
// whole-device synchronisation. Plain C++ header (no CUDA types). All kernels run on the default stream
// of device 0 (the current device), from one host thread at a time.
#pragma once

#include <string>

namespace dp::cuda {

// Waits for the work queued on the compute stream (every kernel and copy of dptrain, the legacy default
// stream), not for streams of their own such as NCCL's in a CollectiveQueue; throws dp::RuntimeFailure
// with the first asynchronous error.
void synchronize();

// fp32 GEMMs (cuBLAS) use plain fp32 FMA arithmetic by default. allow_tf32(true) lets cuBLAS use the
// tensor cores' TF32 mode (about 3e-4 relative error instead of 1e-6); convolutions always use fp32 FMA.
void allow_tf32(bool allowed);
bool tf32_allowed();

// Arithmetic of every GEMM (linear layers, attention). Operands and results stay fp32 in memory either way.
//   fp32: as allow_tf32 says;
//   bf16: operands rounded to bfloat16 on the tensor cores, products accumulated in fp32
//         (CUBLAS_COMPUTE_32F_FAST_16BF): `[train] precision = "bf16"`.
enum class GemmMath { fp32, bf16 };
void set_gemm_math(GemmMath math);
GemmMath gemm_math();

// Makes `index` the current device of this host thread (one rank per GPU).
void set_device(int index);

// "cuBLAS 130100, CUDA runtime 13000, driver 13000": the versions actually loaded (cuDNN's: conv.h).
std::string library_versions();

}  // namespace dp::cuda
