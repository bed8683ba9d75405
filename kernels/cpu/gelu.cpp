// GELU (tanh approximation), forward and backward, as x sigmoid(2u) with a branch-free exp (Cephes' expf
// polynomial) so that the loops vectorise (std::tanh would not); compiled for AVX-512, AVX2 and baseline
// x86-64, picked at load time.
#include "kernels/cpu/gelu.h"
#include "kernels/cpu/simd.h"

#include <algorithm>
#include <bit>
#include <cstdint>

namespace dp::cpu {
namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;

using simd::exp_nonpositive;

// 0.5 (1 + tanh(u)) = sigmoid(2u). With e = e^{-2|u|} <= 1 both s = sigmoid(2u) and its complement
// 1 - s come without cancellation: s = 1/(1+e) and 1 - s = e/(1+e) for u >= 0, the other way round for
// u < 0 (selected by the sign bit, without a branch).
inline void sigmoid2(float u, float& s, float& sc) {
  const int32_t bits = std::bit_cast<int32_t>(u);
  const int32_t neg = bits >> 31;  // all ones when u < 0
  const float e = exp_nonpositive(2.0f * u);  // e^{-2|u|}
  const float inv = 1.0f / (1.0f + e);
  const int32_t one = std::bit_cast<int32_t>(1.0f), eb = std::bit_cast<int32_t>(e);
  s = std::bit_cast<float>((eb & neg) | (one & ~neg)) * inv;
  sc = std::bit_cast<float>((one & neg) | (eb & ~neg)) * inv;
}

inline float inner(float v) { return kSqrt2OverPi * (v + kCubic * v * v * v); }

}  // namespace

// GELU(x) = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3).
DP_VECTOR_CLONES
void gelu_forward(const float* __restrict x, float* __restrict y, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    const float v = x[i];
    float s, sc;
    sigmoid2(inner(v), s, sc);
    y[i] = v * s;
  }
}

// GELU'(x) = s + 2 x s (1 - s) du/dx.
DP_VECTOR_CLONES
void gelu_backward(const float* x, const float* dy, float* dx, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    const float v = x[i];
    float s, sc;
    sigmoid2(inner(v), s, sc);
    const float du = kSqrt2OverPi * (1.0f + 3.0f * kCubic * v * v);
    dx[i] = dy[i] * (s + 2.0f * v * s * sc * du);
  }
}

}  // namespace dp::cpu
