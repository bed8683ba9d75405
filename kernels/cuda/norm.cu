// Per-sample feature-map normalisation. Forward: one block per sample for the statistics (two passes,
// sums in double), then an element-wise kernel. Backward: per (sample, channel) sums of g and
// g * (x - mean), per-sample coefficients, column sums over samples for dgamma/dbeta, element-wise dx.
#include <cmath>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/norm.h"
#include "lib/core/error.h"

namespace dp::cuda {
namespace {

constexpr int kStatThreads = 512;

__global__ void norm_stats_kernel(const float* __restrict__ x, float* __restrict__ mean,
                                  float* __restrict__ rstd, int64_t size) {
  __shared__ double sh[32];
  const float* xi = x + int64_t(blockIdx.x) * size;
  double s = 0.0;
  for (int64_t j = threadIdx.x; j < size; j += blockDim.x) s += xi[j];
  const float mu = float(detail::block_sum(s, sh) / double(size));
  double sq = 0.0;
  for (int64_t j = threadIdx.x; j < size; j += blockDim.x) {
    const float d = xi[j] - mu;
    sq += double(d * d);
  }
  sq = detail::block_sum(sq, sh);
  if (threadIdx.x == 0) {
    mean[blockIdx.x] = mu;
    rstd[blockIdx.x] = float(1.0 / sqrt(sq / double(size) + double(cpu::kNormEps)));
  }
}

__global__ void norm_apply_kernel(const float* x, const float* __restrict__ gamma, const float* __restrict__ beta,
                                  float* y, const float* __restrict__ mean, const float* __restrict__ rstd,
                                  int64_t total, int64_t channels, int64_t spatial, bool relu) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / spatial;  // sample * channels + channel
    const int64_t c = row % channels, sample = row / channels;
    const float v = (x[i] - mean[sample]) * (rstd[sample] * gamma[c]) + beta[c];
    y[i] = relu ? fmaxf(v, 0.0f) : v;
  }
}

// One block per (sample, channel) row: s_dy = sum g, s_dyx = sum g * (x - mean), g = masked dy.
__global__ void norm_channel_sums_kernel(const float* __restrict__ x, const float* __restrict__ dy,
                                         const float* __restrict__ relu_y, const float* __restrict__ mean,
                                         int64_t channels, int64_t spatial, float* __restrict__ s_dy,
                                         float* __restrict__ s_dyx) {
  __shared__ float sh[32];
  const int64_t row = blockIdx.x, sample = row / channels;
  const float mu = mean[sample];
  const float* xr = x + row * spatial;
  const float* dr = dy + row * spatial;
  const float* rr = relu_y ? relu_y + row * spatial : nullptr;
  float a = 0.0f, b = 0.0f;
  for (int64_t j = threadIdx.x; j < spatial; j += blockDim.x) {
    const float g = (rr && !(rr[j] > 0.0f)) ? 0.0f : dr[j];
    a += g;
    b += g * (xr[j] - mu);
  }
  a = detail::block_sum(a, sh);
  b = detail::block_sum(b, sh);
  if (threadIdx.x == 0) {
    s_dy[row] = a;
    s_dyx[row] = b;
  }
}

// One block per sample: k1 = -rs^2 * m2, k0 = -rs * m1 with m1 = mean(gamma g), m2 = mean(gamma g xhat).
__global__ void norm_coef_kernel(const float* __restrict__ gamma, const float* __restrict__ rstd,
                                 const float* __restrict__ s_dy, const float* __restrict__ s_dyx,
                                 int64_t channels, int64_t spatial, float2* __restrict__ coef) {
  __shared__ double sh[32];
  const int64_t sample = blockIdx.x;
  const float rs = rstd[sample];
  double m1 = 0.0, m2 = 0.0;
  for (int64_t c = threadIdx.x; c < channels; c += blockDim.x) {
    m1 += double(gamma[c]) * s_dy[sample * channels + c];
    m2 += double(gamma[c]) * (s_dyx[sample * channels + c] * rs);
  }
  const double inv_count = 1.0 / double(channels * spatial);
  m1 = detail::block_sum(m1, sh) * inv_count;
  m2 = detail::block_sum(m2, sh) * inv_count;
  if (threadIdx.x == 0)
    coef[sample] = make_float2(float(-double(rs) * double(rs) * m2), float(-double(rs) * m1));
}

__global__ void norm_dx_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                               const float* __restrict__ mean, const float* __restrict__ rstd, const float* dy,
                               const float* __restrict__ relu_y, const float2* __restrict__ coef, float* dx,
                               int64_t total, int64_t channels, int64_t spatial) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / spatial;
    const int64_t c = row % channels, sample = row / channels;
    const float g = (relu_y && !(relu_y[i] > 0.0f)) ? 0.0f : dy[i];
    const float2 k = coef[sample];
    dx[i] = (rstd[sample] * gamma[c]) * g + (x[i] - mean[sample]) * k.x + k.y;
  }
}

struct ParamGrads {  // fn(sample, c) = (s_dyx * rstd, s_dy): column sums give dgamma, dbeta
  const float *s_dy, *s_dyx, *rstd;
  int64_t channels;
  __device__ float2 operator()(int64_t r, int64_t c) const {
    return make_float2(s_dyx[r * channels + c] * rstd[r], s_dy[r * channels + c]);
  }
};

}  // namespace

void norm2d_forward(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                    int64_t n, int64_t channels, int64_t spatial, bool relu) {
  const int64_t total = n * channels * spatial;
  if (total <= 0) return;
  norm_stats_kernel<<<unsigned(n), kStatThreads>>>(x, mean, rstd, channels * spatial);
  DP_CUDA_LAUNCHED();
  norm_apply_kernel<<<detail::grid_for(total), detail::kThreads>>>(x, gamma, beta, y, mean, rstd, total,
                                                                    channels, spatial, relu);
  DP_CUDA_LAUNCHED();
}

void norm2d_backward(const float* x, const float* gamma, const float* mean, const float* rstd, const float* dy,
                     const float* relu_y, float* dx, float* dgamma, float* dbeta, int64_t n, int64_t channels,
                     int64_t spatial, bool accumulate) {
  if (n <= 0 || channels <= 0 || spatial <= 0) {
    detail::column_sums(ParamGrads{}, 0, channels, dgamma, dbeta, accumulate);  // zeros, or unchanged
    return;
  }
  const int64_t rows = n * channels;
  DP_CHECK(rows <= INT32_MAX, "norm2d_backward: more than 2^31 - 1 (sample, channel) rows in one call");
  auto* s_dy = static_cast<float*>(detail::scratch(detail::Slot::kOp, size_t(rows * 2 + n * 2) * sizeof(float)));
  float* s_dyx = s_dy + rows;
  auto* coef = reinterpret_cast<float2*>(s_dyx + rows);  // 8-byte aligned: 2 * rows floats before it
  norm_channel_sums_kernel<<<unsigned(rows), detail::kThreads>>>(
      x, dy, relu_y, mean, channels, spatial, s_dy, s_dyx);
  DP_CUDA_LAUNCHED();
  norm_coef_kernel<<<unsigned(n), detail::kThreads>>>(gamma, rstd, s_dy, s_dyx, channels, spatial, coef);
  DP_CUDA_LAUNCHED();
  detail::column_sums(ParamGrads{s_dy, s_dyx, rstd, channels}, n, channels, dgamma, dbeta, accumulate);
  norm_dx_kernel<<<detail::grid_for(rows * spatial), detail::kThreads>>>(x, gamma, mean, rstd, dy, relu_y, coef,
                                                                         dx, rows * spatial, channels, spatial);
  DP_CUDA_LAUNCHED();
}

}  // namespace dp::cuda
