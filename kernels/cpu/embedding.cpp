// Token + position embedding, forward and backward.
#include "kernels/cpu/embedding.h"

namespace dp::cpu {

void embedding_forward(const int32_t* tokens, const float* wte, const float* wpe, float* out, int64_t b,
                       int64_t t, int64_t c) {
  for (int64_t i = 0; i < b; ++i)
    for (int64_t p = 0; p < t; ++p) {
      const float* __restrict te = wte + int64_t(tokens[i * t + p]) * c;
      const float* __restrict pe = wpe + p * c;
      float* __restrict o = out + (i * t + p) * c;
      for (int64_t k = 0; k < c; ++k) o[k] = te[k] + pe[k];
    }
}

void embedding_backward(const int32_t* tokens, const float* dout, float* dwte, float* dwpe, int64_t b,
                        int64_t t, int64_t c) {
  for (int64_t i = 0; i < b; ++i)
    for (int64_t p = 0; p < t; ++p) {
      const float* __restrict d = dout + (i * t + p) * c;
      float* __restrict te = dwte + int64_t(tokens[i * t + p]) * c;
      float* __restrict pe = dwpe + p * c;
      for (int64_t k = 0; k < c; ++k) {
        te[k] += d[k];
        pe[k] += d[k];
      }
    }
}

}  // namespace dp::cpu
