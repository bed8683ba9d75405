// CPU kernels: the reference implementation and the CPU production path. Every kernel works on raw
// row-major float arrays; dimension letters: N samples, I input width, O output width, C classes.
// kernels/cuda/ mirrors these files one for one.
#pragma once

#include <cstdint>

namespace dp::cpu {

// Threads used by GEMM (OpenBLAS) in this process.
void set_compute_threads(int threads);
int compute_threads();

// ---- linear.cpp: y = x W^T + b ------------------------------------------------------------------------
// x (N, I), w (O, I), b (O), y (N, O)
void linear_forward(const float* x, const float* w, const float* b, float* y, int64_t n, int64_t in,
                    int64_t out);
// dw (O, I) = dy^T x, db (O) = column sums of dy, overwritten or, with accumulate, added to (micro-batches
// summing into one gradient); dx (N, I) = dy w, overwritten, skipped when dx is null.
void linear_backward(const float* x, const float* w, const float* dy, float* dx, float* dw, float* db,
                     int64_t n, int64_t in, int64_t out, bool accumulate);
// The same in parts, so a model can run a wide layer in slices of its outputs [o_begin, o_end) and hand
// each slice's parameters to communication on its own. Each writes only its part:
// y[:, o_begin:o_end] = x w[o_begin:o_end]^T (no bias; y's rows are O wide), then y += b on every row;
// dw[o_begin:o_end] = dy[:, o_begin:o_end]^T x (zero without samples); db = column sums of dy (both
// added to what is there when accumulating);
// dx = dy[:, o_begin:o_end] w[o_begin:o_end], added to dx when accumulating (summed over all slices: dy w).
void linear_forward_rows(const float* x, const float* w, float* y, int64_t n, int64_t in, int64_t out,
                         int64_t o_begin, int64_t o_end);
void linear_add_bias(const float* b, float* y, int64_t n, int64_t out);
void linear_weight_grad_rows(const float* x, const float* dy, float* dw, int64_t n, int64_t in, int64_t out,
                             int64_t o_begin, int64_t o_end, bool accumulate);
void linear_bias_grad(const float* dy, float* db, int64_t n, int64_t out, bool accumulate);
void linear_input_grad_rows(const float* dy, const float* w, float* dx, int64_t n, int64_t in, int64_t out,
                            int64_t o_begin, int64_t o_end, bool accumulate);

// ---- activation.cpp -----------------------------------------------------------------------------------
void relu_forward(const float* x, float* y, int64_t count);
// dx = dy where the forward output y > 0, else 0 (dx may alias dy).
void relu_backward(const float* y, const float* dy, float* dx, int64_t count);
// out = a + b element-wise (residual connections); out may alias a or b.
void add(const float* a, const float* b, float* out, int64_t count);

// ---- cross_entropy.cpp: softmax + negative log-likelihood, fused --------------------------------------
struct LossSums {
  double loss = 0;      // sum over the samples of -log softmax(logits)[label]
  int64_t correct = 0;  // samples whose arg-max equals the label
};
// logits (N, C), labels (N). When dlogits is not null it receives scale * d(sum of losses)/dlogits.
LossSums softmax_cross_entropy(const float* logits, const int32_t* labels, float* dlogits, int64_t n,
                               int64_t classes, float scale);

// ---- optimizer.cpp: updates over a flat range (so a shard is just an offset) -----------------------------
// v = momentum * v + (g + wd * p);  p -= lr * v          (PyTorch's SGD, dampening 0)
void sgd_momentum_update(float* p, const float* g, float* v, int64_t count, float lr, float momentum,
                         float weight_decay);
// AdamW (Loshchilov & Hutter), step t >= 1, bias-corrected; p -= lr * (mhat / (sqrt(vhat) + eps) + wd * p)
void adamw_update(float* p, const float* g, float* m, float* v, int64_t count, float lr, float beta1,
                  float beta2, float eps, float weight_decay, int64_t t);

}  // namespace dp::cpu
