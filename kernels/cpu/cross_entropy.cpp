// Softmax cross-entropy, forward and backward fused: one pass per sample over its logits.
#include <cmath>

#include "kernels/cpu/ops.h"

namespace dp::cpu {

LossSums softmax_cross_entropy(const float* logits, const int32_t* labels, float* dlogits, int64_t n,
                               int64_t classes, float scale) {
  LossSums sums;
  for (int64_t i = 0; i < n; ++i) {
    const float* z = logits + i * classes;
    int64_t argmax = 0;
    for (int64_t c = 1; c < classes; ++c)
      if (z[c] > z[argmax]) argmax = c;
    const float zmax = z[argmax];
    double denom = 0.0;
    for (int64_t c = 0; c < classes; ++c) denom += std::exp(double(z[c] - zmax));
    const int32_t label = labels[i];
    sums.loss += std::log(denom) - double(z[label] - zmax);
    sums.correct += (argmax == label);
    if (dlogits) {
      float* d = dlogits + i * classes;
      const double inv = 1.0 / denom;
      for (int64_t c = 0; c < classes; ++c) d[c] = float(std::exp(double(z[c] - zmax)) * inv) * scale;
      d[label] -= scale;
    }
  }
  return sums;
}

}  // namespace dp::cpu
