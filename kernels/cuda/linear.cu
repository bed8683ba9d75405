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

__global__ void add_bias_kernel(const float* __restrict__ b, float* __restrict__ y, int64_t n, int64_t out) {
  const int64_t total = n * out;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] += b[i % out];
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

void linear_forward_rows(const float* x, const float* w, float* y, int64_t n, int64_t in, int64_t out,
                         int64_t o_begin, int64_t o_end) {
  if (n == 0 || o_end <= o_begin) return;
  // y[:, o_begin:o_end] (N, R; rows O wide) = x (N, I) w[o_begin:o_end]^T (I, R)
  detail::gemm(false, true, n, o_end - o_begin, in, 1.0f, x, in, w + o_begin * in, in, 0.0f, y + o_begin, out);
}

void linear_add_bias(const float* b, float* y, int64_t n, int64_t out) {
  if (n == 0 || out == 0) return;
  add_bias_kernel<<<detail::grid_for(n * out), detail::kThreads>>>(b, y, n, out);
  DP_CUDA_LAUNCHED();
}

void linear_weight_grad_rows(const float* x, const float* dy, float* dw, int64_t n, int64_t in, int64_t out,
                             int64_t o_begin, int64_t o_end, bool accumulate) {
  if (o_end <= o_begin) return;
  if (n == 0) {
    if (!accumulate)
      DP_CUDA_CHECK(cudaMemset(dw + o_begin * in, 0, size_t((o_end - o_begin) * in) * sizeof(float)));
    return;
  }
  // dw[o_begin:o_end] (R, I) (+)= dy[:, o_begin:o_end]^T (R, N) x (N, I)
  detail::gemm(true, false, o_end - o_begin, in, n, 1.0f, dy + o_begin, out, x, in, accumulate ? 1.0f : 0.0f,
               dw + o_begin * in, in);
}

void linear_bias_grad(const float* dy, float* db, int64_t n, int64_t out, bool accumulate) {
  detail::column_sums(RowValue{dy, out}, n, out, db, nullptr, accumulate);  // no samples: zeros, or unchanged
}

void linear_input_grad_rows(const float* dy, const float* w, float* dx, int64_t n, int64_t in, int64_t out,
                            int64_t o_begin, int64_t o_end, bool accumulate) {
  if (n == 0) return;
  // dx (N, I) (+)= dy[:, o_begin:o_end] (N, R) w[o_begin:o_end] (R, I)
  detail::gemm(false, false, n, in, o_end - o_begin, 1.0f, dy + o_begin, out, w + o_begin * in, in,
               accumulate ? 1.0f : 0.0f, dx, in);
}

void linear_backward(const float* x, const float* w, const float* dy, float* dx, float* dw, float* db,
                     int64_t n, int64_t in, int64_t out, bool accumulate) {
  linear_weight_grad_rows(x, dy, dw, n, in, out, 0, out, accumulate);
  linear_bias_grad(dy, db, n, out, accumulate);
  if (dx) linear_input_grad_rows(dy, w, dx, n, in, out, 0, out, false);
}

}  // namespace dp::cuda
