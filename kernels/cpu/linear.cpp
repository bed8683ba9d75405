// Fully connected layer on the CPU through OpenBLAS sgemm.
#include <cblas.h>

#include <algorithm>

#include "kernels/cpu/ops.h"

namespace dp::cpu {

void set_compute_threads(int threads) { openblas_set_num_threads(std::max(1, threads)); }
int compute_threads() { return openblas_get_num_threads(); }

void linear_forward(const float* x, const float* w, const float* b, float* y, int64_t n, int64_t in,
                    int64_t out) {
  if (n == 0) return;
  // y (N, O) = b broadcast, then y += x (N, I) * w^T (I, O)
  for (int64_t i = 0; i < n; ++i) std::copy(b, b + out, y + i * out);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(n), int(out), int(in), 1.0f, x, int(in), w,
              int(in), 1.0f, y, int(out));
}

void linear_backward(const float* x, const float* w, const float* dy, float* dx, float* dw, float* db,
                     int64_t n, int64_t in, int64_t out) {
  if (n == 0) {
    std::fill(dw, dw + out * in, 0.0f);
    std::fill(db, db + out, 0.0f);
    return;
  }
  // dw (O, I) = dy^T (O, N) * x (N, I)
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(out), int(in), int(n), 1.0f, dy, int(out), x,
              int(in), 0.0f, dw, int(in));
  // db (O) = sum over samples of dy
  std::fill(db, db + out, 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    const float* row = dy + i * out;
    for (int64_t o = 0; o < out; ++o) db[o] += row[o];
  }
  // dx (N, I) = dy (N, O) * w (O, I)
  if (dx)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(n), int(in), int(out), 1.0f, dy, int(out),
                w, int(in), 0.0f, dx, int(in));
}

}  // namespace dp::cpu
