// Error checking, the cuBLAS handle, scratch memory and GEMM wrappers shared by the CUDA kernels. (cuDNN
// lives in conv.cu alone, so that only binaries that convolve need libcudnn.so.)
#include <climits>
#include <mutex>
#include <string>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/context.h"
#include "lib/core/error.h"

namespace dp::cuda {
namespace detail {
namespace {

[[noreturn]] void fail(const char* call, const char* file, int line, const std::string& detail) {
  throw RuntimeFailure(source_location(file, line), std::string(call) + " failed: " + detail,
                       "check that the GPU is usable (nvidia-smi) and has enough free memory");
}

struct State {
  std::mutex mutex;
  cublasHandle_t blas = nullptr;
  bool tf32 = false;
  GemmMath math = GemmMath::fp32;
  void* buffers[int(Slot::kCount)] = {};
  size_t sizes[int(Slot::kCount)] = {};
};
State& state() {
  static State* s = new State;  // never destroyed: handles must not be torn down after the driver
  return *s;
}

}  // namespace

void check(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  (void)cudaGetLastError();  // clear a non-sticky error so that the next launch check does not report it
  fail(call, file, line, std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status));
}

void check(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  fail(call, file, line, std::string(cublasGetStatusName(status)) + ": " + cublasGetStatusString(status));
}

int to_int(int64_t v, const char* what, const char* file, int line) {
  if (v < 0 || v > INT_MAX)
    throw InternalError(source_location(file, line),
                        std::string(what) + " = " + std::to_string(v) + " does not fit the library's int");
  return int(v);
}

cublasHandle_t cublas() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.blas) {
    DP_CUDA_CHECK(cublasCreate(&s.blas));
    DP_CUDA_CHECK(cublasSetMathMode(s.blas, s.tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  }
  return s.blas;
}

void* scratch(Slot slot, size_t bytes) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  const int i = int(slot);
  if (bytes > s.sizes[i]) {
    const size_t grown = std::max(bytes, s.sizes[i] + s.sizes[i] / 2);
    if (s.buffers[i]) DP_CUDA_CHECK(cudaFree(s.buffers[i]));  // synchronises: no kernel still uses it
    s.buffers[i] = nullptr;
    s.sizes[i] = 0;
    DP_CUDA_CHECK(cudaMalloc(&s.buffers[i], grown));
    s.sizes[i] = grown;
  }
  return s.buffers[i];
}

namespace {
cublasOperation_t op(bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }
}  // namespace

bool bf16_math() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return s.math == GemmMath::bf16;
}

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (bf16_math()) {
    DP_CUDA_CHECK(cublasGemmEx(cublas(), op(trans_b), op(trans_a), DP_CUDA_INT(n), DP_CUDA_INT(m),
                               DP_CUDA_INT(k), &alpha, b, CUDA_R_32F, DP_CUDA_INT(ldb), a, CUDA_R_32F,
                               DP_CUDA_INT(lda), &beta, c, CUDA_R_32F, DP_CUDA_INT(ldc),
                               CUBLAS_COMPUTE_32F_FAST_16BF, CUBLAS_GEMM_DEFAULT));
    return;
  }
  DP_CUDA_CHECK(cublasSgemm(cublas(), op(trans_b), op(trans_a), DP_CUDA_INT(n), DP_CUDA_INT(m),
                            DP_CUDA_INT(k), &alpha, b, DP_CUDA_INT(ldb), a, DP_CUDA_INT(lda), &beta, c,
                            DP_CUDA_INT(ldc)));
}

void gemm_strided_batched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                          const float* a, int64_t lda, int64_t stride_a, const float* b, int64_t ldb,
                          int64_t stride_b, float beta, float* c, int64_t ldc, int64_t stride_c,
                          int64_t batch) {
  if (m == 0 || n == 0 || batch == 0) return;
  if (bf16_math()) {
    DP_CUDA_CHECK(cublasGemmStridedBatchedEx(
        cublas(), op(trans_b), op(trans_a), DP_CUDA_INT(n), DP_CUDA_INT(m), DP_CUDA_INT(k), &alpha, b,
        CUDA_R_32F, DP_CUDA_INT(ldb), stride_b, a, CUDA_R_32F, DP_CUDA_INT(lda), stride_a, &beta, c, CUDA_R_32F,
        DP_CUDA_INT(ldc), stride_c, DP_CUDA_INT(batch), CUBLAS_COMPUTE_32F_FAST_16BF, CUBLAS_GEMM_DEFAULT));
    return;
  }
  DP_CUDA_CHECK(cublasSgemmStridedBatched(cublas(), op(trans_b), op(trans_a), DP_CUDA_INT(n),
                                          DP_CUDA_INT(m), DP_CUDA_INT(k), &alpha, b, DP_CUDA_INT(ldb),
                                          stride_b, a, DP_CUDA_INT(lda), stride_a, &beta, c,
                                          DP_CUDA_INT(ldc), stride_c, DP_CUDA_INT(batch)));
}

}  // namespace detail

// The legacy default stream: every kernel and copy of dptrain, but not a CollectiveQueue's own stream.
void synchronize() { DP_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy)); }

void allow_tf32(bool allowed) {
  detail::State& s = detail::state();
  std::lock_guard lock(s.mutex);
  s.tf32 = allowed;
  if (s.blas)
    DP_CUDA_CHECK(cublasSetMathMode(s.blas, allowed ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
}

bool tf32_allowed() {
  detail::State& s = detail::state();
  std::lock_guard lock(s.mutex);
  return s.tf32;
}

void set_gemm_math(GemmMath math) {
  detail::State& s = detail::state();
  std::lock_guard lock(s.mutex);
  s.math = math;
}

GemmMath gemm_math() {
  detail::State& s = detail::state();
  std::lock_guard lock(s.mutex);
  return s.math;
}

void set_device(int index) { DP_CUDA_CHECK(cudaSetDevice(index)); }

std::string library_versions() {
  int blas = 0, runtime = 0, driver = 0;
  DP_CUDA_CHECK(cublasGetVersion(detail::cublas(), &blas));
  DP_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  DP_CUDA_CHECK(cudaDriverGetVersion(&driver));
  return "cuBLAS " + std::to_string(blas) + ", CUDA runtime " + std::to_string(runtime) + ", driver " +
         std::to_string(driver);
}

}  // namespace dp::cuda
