// Causal self-attention through OpenBLAS sgemm per (sequence, head). The causal mask is exploited in
// row blocks of kBlock positions: block [r0, r1) only needs keys [0, r1), so the matrix products do about
// (1 + kBlock / T) / 2 of the full T x T work. The softmax uses a branch-free exp so that it vectorises;
// the row loops are compiled for AVX-512, AVX2 and baseline x86-64, picked at load time.
#include "kernels/cpu/attention.h"
#include "kernels/cpu/simd.h"

#include <cblas.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace dp::cpu {
namespace {

constexpr int64_t kBlock = 32;

using simd::exp_nonpositive;

// Floats mapped to integers of the same order (an involution), so that a max over them vectorises.
inline int32_t ordered(int32_t bits) { return bits ^ ((bits >> 31) & 0x7fffffff); }

// row[0..len) <- softmax(row[0..len)); row[len..end) <- 0. Sums run in kLanes independent lanes so that
// they vectorise (a single float accumulator would force sequential adds).
constexpr int64_t kLanes = 16;

inline void causal_softmax_row(float* __restrict row, int64_t len, int64_t end) {
  int32_t mx = ordered(std::bit_cast<int32_t>(row[0]));
  for (int64_t j = 1; j < len; ++j) mx = std::max(mx, ordered(std::bit_cast<int32_t>(row[j])));
  const float m = std::bit_cast<float>(ordered(mx));
  float lanes[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= len; j += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) {
      const float e = exp_nonpositive(row[j + l] - m);
      row[j + l] = e;
      lanes[l] += e;
    }
  for (; j < len; ++j) {
    const float e = exp_nonpositive(row[j] - m);
    row[j] = e;
    lanes[0] += e;
  }
  float sum = 0.0f;
  for (float v : lanes) sum += v;
  const float inv = 1.0f / sum;
  for (j = 0; j < len; ++j) row[j] *= inv;
  std::fill(row + len, row + end, 0.0f);
}

// sum_j a[j] b[j] over [0, len), in kLanes lanes.
inline float dot(const float* __restrict a, const float* __restrict b, int64_t len) {
  float lanes[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= len; j += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) lanes[l] += a[j + l] * b[j + l];
  for (; j < len; ++j) lanes[0] += a[j] * b[j];
  float sum = 0.0f;
  for (float v : lanes) sum += v;
  return sum;
}

}  // namespace

DP_VECTOR_CLONES
void attention_forward(const float* qkv, float* att, float* out, int64_t b, int64_t t, int64_t c,
                       int64_t nh) {
  const int64_t hs = c / nh, ld = 3 * c;
  const float scale = 1.0f / std::sqrt(float(hs));
  for (int64_t i = 0; i < b; ++i)
    for (int64_t h = 0; h < nh; ++h) {
      const float* q = qkv + i * t * ld + h * hs;
      const float* k = q + c;
      const float* v = q + 2 * c;
      float* a = att + (i * nh + h) * t * t;
      float* o = out + i * t * c + h * hs;
      for (int64_t r0 = 0; r0 < t; r0 += kBlock) {
        const int64_t r1 = std::min(t, r0 + kBlock), m = r1 - r0;
        // a[r0:r1, 0:r1] = scale q[r0:r1] k[0:r1]^T
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(m), int(r1), int(hs), scale, q + r0 * ld,
                    int(ld), k, int(ld), 0.0f, a + r0 * t, int(t));
        for (int64_t s = r0; s < r1; ++s) causal_softmax_row(a + s * t, s + 1, t);
        // o[r0:r1] = a[r0:r1, 0:r1] v[0:r1]
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(m), int(hs), int(r1), 1.0f, a + r0 * t,
                    int(t), v, int(ld), 0.0f, o + r0 * c, int(c));
      }
    }
}

DP_VECTOR_CLONES
void attention_backward(const float* qkv, const float* att, const float* dout, float* dqkv, float* scratch,
                        int64_t b, int64_t t, int64_t c, int64_t nh) {
  const int64_t hs = c / nh, ld = 3 * c;
  const float scale = 1.0f / std::sqrt(float(hs));
  for (int64_t i = 0; i < b; ++i)
    for (int64_t h = 0; h < nh; ++h) {
      const float* q = qkv + i * t * ld + h * hs;
      const float* k = q + c;
      const float* v = q + 2 * c;
      float* dq = dqkv + i * t * ld + h * hs;
      float* dk = dq + c;
      float* dv = dq + 2 * c;
      const float* a = att + (i * nh + h) * t * t;
      const float* dout_h = dout + i * t * c + h * hs;
      float* ds = scratch;  // (T, T): d(att), then d(scores) in place
      for (int64_t r0 = 0; r0 < t; r0 += kBlock) {
        const int64_t r1 = std::min(t, r0 + kBlock), m = r1 - r0;
        // datt[r0:r1, 0:r1] = dout[r0:r1] v[0:r1]^T
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(m), int(r1), int(hs), 1.0f,
                    dout_h + r0 * c, int(c), v, int(ld), 0.0f, ds + r0 * t, int(t));
        // dv[r0:r1] = att[r0:t, r0:r1]^T dout[r0:t]  (only later queries see these keys)
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(m), int(hs), int(t - r0), 1.0f,
                    a + r0 * t + r0, int(t), dout_h + r0 * c, int(c), 0.0f, dv + r0 * ld, int(ld));
        // Softmax backward: ds = scale * att * (datt - sum_j att datt), zero above the diagonal.
        for (int64_t s = r0; s < r1; ++s) {
          const float* __restrict ar = a + s * t;
          float* __restrict dr = ds + s * t;
          const float d = dot(ar, dr, s + 1);
          for (int64_t j = 0; j <= s; ++j) dr[j] = scale * ar[j] * (dr[j] - d);
          std::fill(dr + s + 1, dr + r1, 0.0f);
        }
        // dq[r0:r1] = ds[r0:r1, 0:r1] k[0:r1]
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(m), int(hs), int(r1), 1.0f, ds + r0 * t,
                    int(t), k, int(ld), 0.0f, dq + r0 * ld, int(ld));
      }
      // dk[r0:r1] = ds[r0:t, r0:r1]^T q[r0:t]  (needs every later row of ds)
      for (int64_t r0 = 0; r0 < t; r0 += kBlock) {
        const int64_t r1 = std::min(t, r0 + kBlock), m = r1 - r0;
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(m), int(hs), int(t - r0), 1.0f,
                    ds + r0 * t + r0, int(t), q + r0 * ld, int(ld), 0.0f, dk + r0 * ld, int(ld));
      }
    }
}

}  // namespace dp::cpu
