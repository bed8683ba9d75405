// Fully connected layer on the GPU (cuBLAS): the CUDA twin of kernels/cpu/linear.cpp, same parameters,
// device pointers. Plain C++ header.
#pragma once

#include <cstdint>

namespace dp::cuda {

// x (N, I), w (O, I), b (O), y (N, O): y = x w^T + b.
void linear_forward(const float* x, const float* w, const float* b, float* y, int64_t n, int64_t in,
                    int64_t out);
// dw (O, I) = dy^T x, db (O) = column sums of dy, overwritten or, with accumulate, added to (micro-batches
// summing into one gradient); dx (N, I) = dy w, overwritten, skipped when dx is null.
void linear_backward(const float* x, const float* w, const float* dy, float* dx, float* dw, float* db,
                     int64_t n, int64_t in, int64_t out, bool accumulate);
// The same in parts, over output slices [o_begin, o_end) (see kernels/cpu/ops.h).
void linear_forward_rows(const float* x, const float* w, float* y, int64_t n, int64_t in, int64_t out,
                         int64_t o_begin, int64_t o_end);
void linear_add_bias(const float* b, float* y, int64_t n, int64_t out);
void linear_weight_grad_rows(const float* x, const float* dy, float* dw, int64_t n, int64_t in, int64_t out,
                             int64_t o_begin, int64_t o_end, bool accumulate);
void linear_bias_grad(const float* dy, float* db, int64_t n, int64_t out, bool accumulate);
void linear_input_grad_rows(const float* dy, const float* w, float* dx, int64_t n, int64_t in, int64_t out,
                            int64_t o_begin, int64_t o_end, bool accumulate);

// Row-major GEMM for other callers (models, benchmarks): c (m, n; leading dimension ldc) =
// alpha op(a) op(b) + beta c, where op(a) is (m, k) and trans_a means a is stored (k, m).
void matmul(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
            int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace dp::cuda
