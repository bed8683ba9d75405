// Softmax cross-entropy: one warp per sample (max and arg-max, the exp sum in double, the gradient), then
// one block sums the per-sample losses and hits in a fixed order.
#include <cmath>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cross_entropy.h"

namespace dp::cuda {
namespace {

__global__ void ce_rows_kernel(const float* logits, const int32_t* __restrict__ labels, float* dlogits,
                               int64_t n, int64_t classes, float scale, double* __restrict__ row_loss,
                               int* __restrict__ row_hit) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x >> 5);
  for (int64_t i = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; i < n; i += warps) {
    const float* z = logits + i * classes;
    // Maximum and the first index holding it (as the CPU's strict > scan finds).
    float best = -INFINITY;
    int64_t arg = INT64_MAX;
    for (int64_t c = lane; c < classes; c += 32)
      if (arg == INT64_MAX || z[c] > best) {
        best = z[c];
        arg = c;
      }
    for (int offset = 16; offset > 0; offset >>= 1) {
      const float ob = __shfl_xor_sync(0xffffffffu, best, offset);
      const int64_t oa = __shfl_xor_sync(0xffffffffu, arg, offset);
      if (oa != INT64_MAX && (arg == INT64_MAX || ob > best || (ob == best && oa < arg))) {
        best = ob;
        arg = oa;
      }
    }
    double denom = 0.0;
    for (int64_t c = lane; c < classes; c += 32) denom += double(expf(z[c] - best));
    denom = detail::warp_sum(denom);
    const int32_t label = labels[i];
    const bool valid = label >= 0 && label < classes;
    const float z_label = valid ? z[label] : NAN;
    __syncwarp();  // every lane has read z before any lane overwrites it (dlogits may alias logits)
    if (lane == 0) {
      row_loss[i] = log(denom) - double(z_label - best);
      row_hit[i] = valid && arg == label;
    }
    if (dlogits) {
      float* d = dlogits + i * classes;
      const double inv = 1.0 / denom;
      for (int64_t c = lane; c < classes; c += 32) {
        float v = float(double(expf(z[c] - best)) * inv) * scale;
        if (c == label) v -= scale;
        d[c] = valid ? v : 0.0f;  // an out-of-range label: NaN loss, zero gradient
      }
    }
  }
}

// One block: fixed per-thread strides, then a fixed reduction tree.
__global__ void ce_total_kernel(const double* __restrict__ row_loss, const int* __restrict__ row_hit,
                                int64_t n, double* __restrict__ total_loss,
                                long long* __restrict__ total_hits) {
  __shared__ double sh_loss[32];
  __shared__ long long sh_hits[32];
  double loss = 0.0;
  long long hits = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    loss += row_loss[i];
    hits += row_hit[i];
  }
  loss = detail::block_sum(loss, sh_loss);
  hits = detail::block_sum(hits, sh_hits);
  if (threadIdx.x == 0) {
    *total_loss = loss;
    *total_hits = hits;
  }
}

}  // namespace

LossSums softmax_cross_entropy(const float* logits, const int32_t* labels, float* dlogits, int64_t n,
                               int64_t classes, float scale) {
  LossSums sums;
  if (n <= 0) return sums;
  // scratch: row_loss (n doubles) | totals (double + long long) | row_hit (n ints)
  auto* base = static_cast<char*>(detail::scratch(detail::Slot::kOp, size_t(n) * 12 + 16));
  auto* row_loss = reinterpret_cast<double*>(base);
  auto* total_loss = reinterpret_cast<double*>(base + size_t(n) * 8);
  auto* total_hits = reinterpret_cast<long long*>(base + size_t(n) * 8 + 8);
  auto* row_hit = reinterpret_cast<int*>(base + size_t(n) * 8 + 16);
  ce_rows_kernel<<<detail::grid_for_warps(n), detail::kThreads>>>(logits, labels, dlogits, n, classes, scale,
                                                                   row_loss, row_hit);
  DP_CUDA_LAUNCHED();
  ce_total_kernel<<<1, 1024>>>(row_loss, row_hit, n, total_loss, total_hits);
  DP_CUDA_LAUNCHED();
  long long hits = 0;
  DP_CUDA_CHECK(cudaMemcpy(&sums.loss, total_loss, sizeof(double), cudaMemcpyDeviceToHost));
  DP_CUDA_CHECK(cudaMemcpy(&hits, total_hits, sizeof(long long), cudaMemcpyDeviceToHost));
  sums.correct = hits;
  return sums;
}

}  // namespace dp::cuda
