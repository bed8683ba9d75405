// Fully connected layer through cuBLAS sgemm; the bias broadcast and bias gradient are own kernels.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/linear.h"

namespace dp::cuda {
namespace {

__global__ void broadcast_rows_kernel(const float* __restrict__ b, float* __restrict__ y, int64_t n,
                                      int64_t out) {
  const int64_t total = n * out;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = b[i % out];
}

struct RowValue {  // fn(r, c) = dy[r, c] for the column sums
  const float* dy;
  int64_t cols;
  __device__ float2 operator()(int64_t r, int64_t c) const { return make_float2(dy[r * cols + c], 0.0f); }
};

}  // namespace

void matmul(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
            int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  detail::gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void linear_forward(const float* x, const float* w, const float* b, float* y, int64_t n, int64_t in,
                    int64_t out) {
  if (n == 0 || out == 0) return;
  // y (N, O) = b broadcast, then y += x (N, I) w^T (I, O)
  broadcast_rows_kernel<<<detail::grid_for(n * out), detail::kThreads>>>(b, y, n, out);
  DP_CUDA_LAUNCHED();
  detail::gemm(false, true, n, out, in, 1.0f, x, in, w, in, 1.0f, y, out);
}

void linear_backward(const float* x, const float* w, const float* dy, float* dx, float* dw, float* db,
                     int64_t n, int64_t in, int64_t out) {
  if (n == 0) {
    DP_CUDA_CHECK(cudaMemset(dw, 0, size_t(out * in) * sizeof(float)));
    DP_CUDA_CHECK(cudaMemset(db, 0, size_t(out) * sizeof(float)));
    return;
  }
  // dw (O, I) = dy^T (O, N) x (N, I)
  detail::gemm(true, false, out, in, n, 1.0f, dy, out, x, in, 0.0f, dw, in);
  // db (O) = sum over samples of dy
  detail::column_sums(RowValue{dy, out}, n, out, db, nullptr);
  // dx (N, I) = dy (N, O) w (O, I)
  if (dx) detail::gemm(false, false, n, in, out, 1.0f, dy, out, w, in, 0.0f, dx, in);
}

}  // namespace dp::cuda
