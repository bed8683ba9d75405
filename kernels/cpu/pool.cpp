// Global average pooling on the CPU.
#include "kernels/cpu/pool.h"

#include <algorithm>

namespace dp::cpu {

void global_avg_pool_forward(const float* x, float* y, int64_t n, int64_t channels, int64_t spatial) {
  const float inv = 1.0f / float(spatial);
  for (int64_t r = 0; r < n * channels; ++r) {
    const float* v = x + r * spatial;
    float acc[8] = {};  // independent partial sums so the loop vectorises
    int64_t j = 0;
    for (; j + 8 <= spatial; j += 8)
      for (int u = 0; u < 8; ++u) acc[u] += v[j + u];
    float sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; j < spatial; ++j) sum += v[j];
    y[r] = sum * inv;
  }
}

void global_avg_pool_backward(const float* dy, float* dx, int64_t n, int64_t channels, int64_t spatial) {
  const float inv = 1.0f / float(spatial);
  for (int64_t r = 0; r < n * channels; ++r) std::fill(dx + r * spatial, dx + (r + 1) * spatial, dy[r] * inv);
}

}  // namespace dp::cpu
