// Optimizer updates over flat parameter ranges (SGD with momentum, AdamW).
#include <cmath>

#include "kernels/cpu/ops.h"

namespace dp::cpu {

void sgd_momentum_update(float* p, const float* g, float* v, int64_t count, float lr, float momentum,
                         float weight_decay) {
  for (int64_t i = 0; i < count; ++i) {
    const float grad = g[i] + weight_decay * p[i];
    v[i] = momentum * v[i] + grad;
    p[i] -= lr * v[i];
  }
}

void adamw_update(float* p, const float* g, float* m, float* v, int64_t count, float lr, float beta1,
                  float beta2, float eps, float weight_decay, int64_t t) {
  const float c1 = 1.0f / (1.0f - std::pow(beta1, float(t)));
  const float c2 = 1.0f / (1.0f - std::pow(beta2, float(t)));
  for (int64_t i = 0; i < count; ++i) {
    m[i] = beta1 * m[i] + (1.0f - beta1) * g[i];
    v[i] = beta2 * v[i] + (1.0f - beta2) * g[i] * g[i];
    const float mhat = m[i] * c1;
    const float vhat = v[i] * c2;
    p[i] -= lr * (mhat / (std::sqrt(vhat) + eps) + weight_decay * p[i]);
  }
}

}  // namespace dp::cpu
