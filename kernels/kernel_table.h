// One table of functions per compute backend (nccl-tests style): models and optimizers are written once
// against this table and run on whichever backend they are given. kernels/cpu/kernel_table.cpp and
// kernels/cuda/kernel_table.cu fill it from the mirrored kernel files, whose signatures are identical;
// every pointer a kernel receives lives in the backend's memory (host memory for the CPU table, device
// memory for the CUDA table). Memory functions move data between that memory and the host.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/conv.h"
#include "kernels/cpu/ops.h"

namespace dp {

struct Kernels {
  const char* name;    // "cpu", "cuda"
  bool host_memory;    // pointers are host pointers (the CPU) or device pointers (CUDA)

  // ---- memory -----------------------------------------------------------------------------------------
  void* (*alloc)(size_t bytes);            // nullptr for 0 bytes; throws when out of memory
  void (*free)(void* p) noexcept;
  void (*upload)(void* dst, const void* host_src, size_t bytes);
  void (*download)(void* host_dst, const void* src, size_t bytes);  // waits for queued work
  void (*copy)(void* dst, const void* src, size_t bytes);           // both in the backend's memory
  void (*zero)(void* dst, size_t bytes);
  void (*synchronize)();                   // waits for the kernels queued so far (no-op on the CPU)

  // ---- linear, activations, loss ------------------------------------------------------------------------
  void (*linear_forward)(const float* x, const float* w, const float* b, float* y, int64_t n, int64_t in,
                         int64_t out);
  void (*linear_backward)(const float* x, const float* w, const float* dy, float* dx, float* dw, float* db,
                          int64_t n, int64_t in, int64_t out, bool accumulate);
  // linear_forward and linear_backward in parts, over output slices (kernels/cpu/ops.h)
  void (*linear_forward_rows)(const float* x, const float* w, float* y, int64_t n, int64_t in, int64_t out,
                              int64_t o_begin, int64_t o_end);
  void (*linear_add_bias)(const float* b, float* y, int64_t n, int64_t out);
  void (*linear_weight_grad_rows)(const float* x, const float* dy, float* dw, int64_t n, int64_t in,
                                  int64_t out, int64_t o_begin, int64_t o_end, bool accumulate);
  void (*linear_bias_grad)(const float* dy, float* db, int64_t n, int64_t out, bool accumulate);
  void (*linear_input_grad_rows)(const float* dy, const float* w, float* dx, int64_t n, int64_t in, int64_t out,
                                 int64_t o_begin, int64_t o_end, bool accumulate);
  void (*relu_forward)(const float* x, float* y, int64_t count);
  void (*relu_backward)(const float* y, const float* dy, float* dx, int64_t count);
  void (*add)(const float* a, const float* b, float* out, int64_t count);
  cpu::LossSums (*softmax_cross_entropy)(const float* logits, const int32_t* labels, float* dlogits,
                                         int64_t n, int64_t classes, float scale);

  // ---- images -------------------------------------------------------------------------------------------
  void (*conv2d_forward)(const cpu::ConvShape& s, const float* x, const float* w, const float* b, float* y,
                         float* workspace);
  void (*conv2d_backward)(const cpu::ConvShape& s, const float* x, const float* w, const float* dy, float* dx,
                          float* dw, float* db, float* workspace, bool accumulate);
  int64_t (*conv2d_workspace)(const cpu::ConvShape& s);  // floats the caller provides (0: none needed)
  void (*norm2d_forward)(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                         float* rstd, int64_t n, int64_t channels, int64_t spatial, bool relu);
  void (*norm2d_backward)(const float* x, const float* gamma, const float* mean, const float* rstd,
                          const float* dy, const float* relu_y, float* dx, float* dgamma, float* dbeta,
                          int64_t n, int64_t channels, int64_t spatial, bool accumulate);
  void (*global_avg_pool_forward)(const float* x, float* y, int64_t n, int64_t channels, int64_t spatial);
  void (*global_avg_pool_backward)(const float* dy, float* dx, int64_t n, int64_t channels, int64_t spatial);

  // ---- transformers -------------------------------------------------------------------------------------
  void (*embedding_forward)(const int32_t* tokens, const float* wte, const float* wpe, float* out, int64_t b,
                            int64_t t, int64_t c);
  void (*embedding_backward)(const int32_t* tokens, const float* dout, float* dwte, float* dwpe, int64_t b,
                             int64_t t, int64_t c);
  void (*layernorm_forward)(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                            float* rstd, int64_t n, int64_t c);
  void (*layernorm_backward)(const float* x, const float* gamma, const float* mean, const float* rstd,
                             const float* dy, float* dx, float* dgamma, float* dbeta, int64_t n, int64_t c,
                             bool accumulate);
  void (*gelu_forward)(const float* x, float* y, int64_t count);
  void (*gelu_backward)(const float* x, const float* dy, float* dx, int64_t count);
  void (*attention_forward)(const float* qkv, float* att, float* out, int64_t b, int64_t t, int64_t c,
                            int64_t nh);
  void (*attention_backward)(const float* qkv, const float* att, const float* dout, float* dqkv,
                             float* scratch, int64_t b, int64_t t, int64_t c, int64_t nh);
  int64_t (*attention_scratch)(int64_t t, int64_t nh);  // floats of scratch the backward needs

  // ---- optimizers ---------------------------------------------------------------------------------------
  void (*sgd_momentum_update)(float* p, const float* g, float* v, int64_t count, float lr, float momentum,
                              float weight_decay);
  void (*adamw_update)(float* p, const float* g, float* m, float* v, int64_t count, float lr, float beta1,
                       float beta2, float eps, float weight_decay, int64_t t);
};

// The CPU backend's table (always built).
const Kernels& cpu_kernels();
// The CUDA backend's table: defined only when the CUDA backend is built; reach it through
// lib/core/backend.h (kernels_for), which knows whether it exists.
const Kernels& cuda_kernels();

}  // namespace dp
