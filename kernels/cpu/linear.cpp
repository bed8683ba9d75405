// Fully connected layer on the CPU through OpenBLAS sgemm.
#include <cblas.h>

#include <algorithm>

#include "kernels/cpu/conv.h"
#include "kernels/cpu/ops.h"

namespace dp::cpu {

void set_compute_threads(int threads) {
  openblas_set_num_threads(std::max(1, threads));
  set_conv_threads(threads);
}
int compute_threads() { return openblas_get_num_threads(); }

void linear_forward(const float* x, const float* w, const float* b, float* y, int64_t n, int64_t in,
                    int64_t out) {
  if (n == 0) return;
  // y (N, O) = b broadcast, then y += x (N, I) * w^T (I, O)
  for (int64_t i = 0; i < n; ++i) std::copy(b, b + out, y + i * out);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(n), int(out), int(in), 1.0f, x, int(in), w,
              int(in), 1.0f, y, int(out));
}

void linear_forward_rows(const float* x, const float* w, float* y, int64_t n, int64_t in, int64_t out,
                         int64_t o_begin, int64_t o_end) {
  if (n == 0 || o_end <= o_begin) return;
  // y[:, o_begin:o_end] (N, R; rows O wide) = x (N, I) * w[o_begin:o_end]^T (I, R)
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(n), int(o_end - o_begin), int(in), 1.0f, x, int(in),
              w + o_begin * in, int(in), 0.0f, y + o_begin, int(out));
}

void linear_add_bias(const float* b, float* y, int64_t n, int64_t out) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t o = 0; o < out; ++o) y[i * out + o] += b[o];
}

void linear_weight_grad_rows(const float* x, const float* dy, float* dw, int64_t n, int64_t in, int64_t out,
                             int64_t o_begin, int64_t o_end, bool accumulate) {
  if (o_end <= o_begin) return;
  if (n == 0) {
    if (!accumulate) std::fill(dw + o_begin * in, dw + o_end * in, 0.0f);
    return;
  }
  // dw[o_begin:o_end] (R, I) (+)= dy[:, o_begin:o_end]^T (R, N) * x (N, I)
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(o_end - o_begin), int(in), int(n), 1.0f,
              dy + o_begin, int(out), x, int(in), accumulate ? 1.0f : 0.0f, dw + o_begin * in, int(in));
}

void linear_bias_grad(const float* dy, float* db, int64_t n, int64_t out, bool accumulate) {
  if (!accumulate) std::fill(db, db + out, 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    const float* row = dy + i * out;
    for (int64_t o = 0; o < out; ++o) db[o] += row[o];
  }
}

void linear_input_grad_rows(const float* dy, const float* w, float* dx, int64_t n, int64_t in, int64_t out,
                            int64_t o_begin, int64_t o_end, bool accumulate) {
  if (n == 0) return;
  // dx (N, I) (+)= dy[:, o_begin:o_end] (N, R) * w[o_begin:o_end] (R, I)
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(n), int(in), int(o_end - o_begin), 1.0f,
              dy + o_begin, int(out), w + o_begin * in, int(in), accumulate ? 1.0f : 0.0f, dx, int(in));
}

void linear_backward(const float* x, const float* w, const float* dy, float* dx, float* dw, float* db,
                     int64_t n, int64_t in, int64_t out, bool accumulate) {
  linear_weight_grad_rows(x, dy, dw, n, in, out, 0, out, accumulate);
  linear_bias_grad(dy, db, n, out, accumulate);
  if (dx) linear_input_grad_rows(dy, w, dx, n, in, out, 0, out, false);
}

}  // namespace dp::cpu
