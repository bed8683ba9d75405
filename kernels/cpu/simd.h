// Helpers for CPU loops that must vectorise without -ffast-math: GCC function multi-versioning (one
// copy per x86-64 ISA level, picked by the dynamic loader) and a branch-free exp.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>

// Put before a function definition to compile it for AVX-512, AVX2 and baseline x86-64.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define DP_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define DP_VECTOR_CLONES
#endif

namespace dp::cpu::simd {

// e^x for x <= 0 (positive x is read as -x), branch-free so that loops over it vectorise: Cephes' expf
// polynomial (relative error about 2e-7), with 2^k built from bits. |x| is capped at 100 and 2^k flushes
// to zero below 2^-126, through integer min/max (float clamps would leave branches GCC cannot vectorise
// without -ffast-math), so the result is 0 for x < -87.3 and never inf or NaN.
inline float exp_nonpositive(float x) {
  const int32_t mag = std::min(std::bit_cast<int32_t>(x) & 0x7fffffff, std::bit_cast<int32_t>(100.0f));
  x = -std::bit_cast<float>(mag);
  // x = k ln2 + r, |r| <= ln2 / 2, k rounded by the 1.5 * 2^23 trick (vectorises, unlike nearbyint).
  const float k = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = (x - k * 0.693359375f) - k * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t biased = std::max(int32_t(k), int32_t(-127)) + 127;  // 0: 2^k flushed to zero
  return p * std::bit_cast<float>(biased << 23);
}

}  // namespace dp::cpu::simd
