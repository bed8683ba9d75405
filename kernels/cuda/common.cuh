// Internal to kernels/cuda/*.cu (CUDA types allowed here, unlike the public *.h): error checks that throw
// dp::RuntimeFailure, the process-wide cuBLAS/cuDNN handles and scratch memory (context.cu), row-major
// GEMM helpers, launch sizes and the block/warp reductions the kernels share. Everything runs on the
// default (legacy) stream, so consecutive calls are ordered without further synchronisation.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace dp::cuda::detail {

// Throw dp::RuntimeFailure("file:line", "<call> failed: <library name>: <message>") unless ok.
void check(cudaError_t status, const char* call, const char* file, int line);
void check(cublasStatus_t status, const char* call, const char* file, int line);
void check(cudnnStatus_t status, const char* call, const char* file, int line);  // in conv.cu
// Throws InternalError at file:line when a dimension does not fit the libraries' int.
int to_int(int64_t v, const char* what, const char* file, int line);

cublasHandle_t cublas();  // created on first use; throws when cuBLAS cannot start
cudnnHandle_t cudnn();    // likewise for cuDNN (conv.cu: only convolutions pull in libcudnn)

// Process-wide device scratch, one growing buffer per slot. A slot's previous contents are lost when it
// grows; one operation uses each slot for one purpose only.
enum class Slot { kOp, kReduce, kCudnn, kCount };
void* scratch(Slot slot, size_t bytes);

// Row-major GEMM: C (m x n, leading dimension ldc) = alpha op(A) op(B) + beta C, op(A) m x k, op(B) k x n;
// trans_a means A is stored k x m. Computed as the column-major C^T = op(B)^T op(A)^T.
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
// The same for `batch` independent products, the i-th at a + i*stride_a, b + i*stride_b, c + i*stride_c.
void gemm_strided_batched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                          const float* a, int64_t lda, int64_t stride_a, const float* b, int64_t ldb,
                          int64_t stride_b, float beta, float* c, int64_t ldc, int64_t stride_c,
                          int64_t batch);

}  // namespace dp::cuda::detail

#define DP_CUDA_CHECK(call) ::dp::cuda::detail::check((call), #call, __FILE__, __LINE__)
// After every kernel launch: launch-configuration errors surface here, not at the next call.
#define DP_CUDA_LAUNCHED() ::dp::cuda::detail::check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
#define DP_CUDA_INT(v) ::dp::cuda::detail::to_int((v), #v, __FILE__, __LINE__)

namespace dp::cuda::detail {

inline constexpr int kThreads = 256;

// Blocks for a grid-stride loop over `count` items (at least 1; kernels bound-check every index).
inline unsigned grid_for(int64_t count, int threads = kThreads) {
  const int64_t blocks = (count + threads - 1) / threads;
  return unsigned(std::clamp<int64_t>(blocks, 1, 8192));
}
// Blocks for one warp per row, kThreads / 32 rows per block.
inline unsigned grid_for_warps(int64_t rows) { return grid_for(rows * 32); }

template <class T>
__device__ inline T warp_sum(T v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
__device__ inline float warp_max(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024), returned to every thread. `shared`
// holds 32 values; the block may call this again right after (the trailing barrier protects it).
template <class T>
__device__ inline T block_sum(T v, T* shared) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_sum(v);
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    T w = lane < warps ? shared[lane] : T(0);
    w = warp_sum(w);
    if (lane == 0) shared[0] = w;
  }
  __syncthreads();
  const T total = shared[0];
  __syncthreads();
  return total;
}

// Column sums of a rows x cols matrix given by fn(r, c) -> float2 (two sums at once): out0[c] = sum_r
// fn(r, c).x, out1[c] (if not null) = sum_r fn(r, c).y. Deterministic: fixed chunks of rows, partial sums
// in scratch (Slot::kReduce), then a fixed-order sum over the chunks. Threads of a warp read 32
// consecutive columns (coalesced for row-major data). Outputs are overwritten (zero when rows == 0), or
// added to when `accumulate`.
constexpr int kColTile = 32, kColLanes = 8;

template <class Fn>
__global__ void column_partial_kernel(Fn fn, int64_t rows, int64_t cols, int64_t rows_per_chunk,
                                      float2* partial) {
  __shared__ float2 sh[kColLanes][kColTile + 1];
  const int64_t c = int64_t(blockIdx.x) * kColTile + threadIdx.x;
  const int64_t r0 = int64_t(blockIdx.y) * rows_per_chunk;
  const int64_t r1 = min(rows, r0 + rows_per_chunk);
  float2 acc = make_float2(0.0f, 0.0f);
  if (c < cols)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kColLanes) {
      const float2 v = fn(r, c);
      acc.x += v.x;
      acc.y += v.y;
    }
  sh[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    float2 s = sh[0][threadIdx.x];
    for (int j = 1; j < kColLanes; ++j) {
      s.x += sh[j][threadIdx.x].x;
      s.y += sh[j][threadIdx.x].y;
    }
    partial[int64_t(blockIdx.y) * cols + c] = s;
  }
}

// A template so that each .cu gets its own copy (no relocatable device code in this build).
template <int kUnused = 0>
__global__ void column_finish_kernel(const float2* partial, int64_t chunks, int64_t cols, float* out0,
                                     float* out1, bool accumulate) {
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < cols;
       c += int64_t(gridDim.x) * blockDim.x) {
    float2 s = make_float2(0.0f, 0.0f);
    for (int64_t k = 0; k < chunks; ++k) {
      s.x += partial[k * cols + c].x;
      s.y += partial[k * cols + c].y;
    }
    out0[c] = accumulate ? out0[c] + s.x : s.x;
    if (out1) out1[c] = accumulate ? out1[c] + s.y : s.y;
  }
}

template <class Fn>
void column_sums(Fn fn, int64_t rows, int64_t cols, float* out0, float* out1, bool accumulate = false) {
  if (cols <= 0 || (rows <= 0 && accumulate)) return;
  if (rows <= 0) {
    DP_CUDA_CHECK(cudaMemset(out0, 0, size_t(cols) * sizeof(float)));
    if (out1) DP_CUDA_CHECK(cudaMemset(out1, 0, size_t(cols) * sizeof(float)));
    return;
  }
  const int64_t chunks = std::min<int64_t>((rows + 63) / 64, 256);
  const int64_t rows_per_chunk = (rows + chunks - 1) / chunks;
  auto* partial = static_cast<float2*>(scratch(Slot::kReduce, size_t(chunks * cols) * sizeof(float2)));
  const dim3 grid(unsigned((cols + kColTile - 1) / kColTile), unsigned(chunks));
  column_partial_kernel<<<grid, dim3(kColTile, kColLanes)>>>(fn, rows, cols, rows_per_chunk, partial);
  DP_CUDA_LAUNCHED();
  column_finish_kernel<0><<<grid_for(cols), kThreads>>>(partial, chunks, cols, out0, out1, accumulate);
  DP_CUDA_LAUNCHED();
}

}  // namespace dp::cuda::detail
