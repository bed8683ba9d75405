// Causal self-attention, straightforward: per sequence, all heads at once through cuBLAS strided-batched
// GEMMs (head h's q/k/v are column blocks of qkv, so the batch stride is HS), full T x T score matrices
// (the masked half is computed and then zeroed), and warp-per-row kernels for the causal softmax and its
// backward.
#include <cmath>

#include "kernels/cuda/attention.h"
#include "kernels/cuda/common.cuh"
#include "lib/core/error.h"

namespace dp::cuda {
namespace {

// Rows of (.., T, T) in place: row s (query position s = row % T) <- softmax over keys [0, s], zeros after.
__global__ void causal_softmax_kernel(float* __restrict__ att, int64_t rows, int64_t t) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x >> 5);
  for (int64_t r = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; r < rows; r += warps) {
    float* a = att + r * t;
    const int64_t len = r % t + 1;
    float m = -INFINITY;
    for (int64_t j = lane; j < len; j += 32) m = fmaxf(m, a[j]);
    m = detail::warp_max(m);
    float sum = 0.0f;
    for (int64_t j = lane; j < len; j += 32) {
      const float e = expf(a[j] - m);
      a[j] = e;
      sum += e;
    }
    const float inv = 1.0f / detail::warp_sum(sum);
    for (int64_t j = lane; j < t; j += 32) a[j] = j < len ? a[j] * inv : 0.0f;
  }
}

// Softmax backward in place on d (datt -> dscores): d = scale * a * (d - sum_j a d) for keys j <= s,
// zero above the diagonal.
__global__ void causal_softmax_backward_kernel(const float* __restrict__ att, float* __restrict__ d,
                                               int64_t rows, int64_t t, float scale) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x >> 5);
  for (int64_t r = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; r < rows; r += warps) {
    const float* a = att + r * t;
    float* dr = d + r * t;
    const int64_t len = r % t + 1;
    float dot = 0.0f;
    for (int64_t j = lane; j < len; j += 32) dot += a[j] * dr[j];
    dot = detail::warp_sum(dot);
    for (int64_t j = lane; j < t; j += 32) dr[j] = j < len ? scale * a[j] * (dr[j] - dot) : 0.0f;
  }
}

}  // namespace

void attention_forward(const float* qkv, float* att, float* out, int64_t b, int64_t t, int64_t c,
                       int64_t nh) {
  if (b <= 0 || t <= 0 || c <= 0) return;
  DP_CHECK(nh > 0 && c % nh == 0, "attention: heads must divide the channels");
  const int64_t hs = c / nh, ld = 3 * c, tt = t * t;
  const float scale = 1.0f / std::sqrt(float(hs));
  for (int64_t i = 0; i < b; ++i) {
    const float* q = qkv + i * t * ld;
    const float* k = q + c;
    float* a = att + i * nh * tt;
    // a_h (T, T) = scale q_h k_h^T for every head h
    detail::gemm_strided_batched(false, true, t, t, hs, scale, q, ld, hs, k, ld, hs, 0.0f, a, t, tt, nh);
  }
  const int64_t rows = b * nh * t;
  causal_softmax_kernel<<<detail::grid_for_warps(rows), detail::kThreads>>>(att, rows, t);
  DP_CUDA_LAUNCHED();
  for (int64_t i = 0; i < b; ++i) {
    const float* v = qkv + i * t * ld + 2 * c;
    // out_h (T, HS; row stride C) = a_h (T, T) v_h (T, HS)
    detail::gemm_strided_batched(false, false, t, hs, t, 1.0f, att + i * nh * tt, t, tt, v, ld, hs, 0.0f,
                                 out + i * t * c, c, hs, nh);
  }
}

void attention_backward(const float* qkv, const float* att, const float* dout, float* dqkv, float* scratch,
                        int64_t b, int64_t t, int64_t c, int64_t nh) {
  if (b <= 0 || t <= 0 || c <= 0) return;
  DP_CHECK(nh > 0 && c % nh == 0, "attention: heads must divide the channels");
  const int64_t hs = c / nh, ld = 3 * c, tt = t * t;
  const float scale = 1.0f / std::sqrt(float(hs));
  for (int64_t i = 0; i < b; ++i) {
    const float* q = qkv + i * t * ld;
    const float* k = q + c;
    const float* v = q + 2 * c;
    const float* a = att + i * nh * tt;
    const float* dout_i = dout + i * t * c;
    float* dq = dqkv + i * t * ld;
    float* dk = dq + c;
    float* dv = dq + 2 * c;
    float* ds = scratch;  // (NH, T, T): d(att), then d(scores) in place
    // datt_h = dout_h v_h^T
    detail::gemm_strided_batched(false, true, t, t, hs, 1.0f, dout_i, c, hs, v, ld, hs, 0.0f, ds, t, tt, nh);
    // dv_h = a_h^T dout_h
    detail::gemm_strided_batched(true, false, t, hs, t, 1.0f, a, t, tt, dout_i, c, hs, 0.0f, dv, ld, hs, nh);
    causal_softmax_backward_kernel<<<detail::grid_for_warps(nh * t), detail::kThreads>>>(a, ds, nh * t, t,
                                                                                          scale);
    DP_CUDA_LAUNCHED();
    // dq_h = ds_h k_h;  dk_h = ds_h^T q_h
    detail::gemm_strided_batched(false, false, t, hs, t, 1.0f, ds, t, tt, k, ld, hs, 0.0f, dq, ld, hs, nh);
    detail::gemm_strided_batched(true, false, t, hs, t, 1.0f, ds, t, tt, q, ld, hs, 0.0f, dk, ld, hs, nh);
  }
}

}  // namespace dp::cuda
