// The CPU backend's kernel table: host memory and the kernels of this folder.
#include "kernels/kernel_table.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/gelu.h"
#include "kernels/cpu/layernorm.h"
#include "kernels/cpu/norm.h"
#include "kernels/cpu/pool.h"

namespace dp {
namespace {

void* host_alloc(size_t bytes) {
  if (bytes == 0) return nullptr;
  // 64-byte aligned (cache lines, AVX-512 loads); aligned_alloc wants a multiple of the alignment.
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!p) throw std::bad_alloc();
  return p;
}
void host_free(void* p) noexcept { std::free(p); }
void host_copy(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}
void host_zero(void* dst, size_t bytes) {
  if (bytes) std::memset(dst, 0, bytes);
}
void no_wait() {}

int64_t conv_workspace(const cpu::ConvShape& s) { return cpu::conv2d_workspace(s); }
int64_t attention_scratch(int64_t t, int64_t /*nh*/) { return t * t; }

const Kernels kCpu{
    .name = "cpu",
    .host_memory = true,
    .alloc = host_alloc,
    .free = host_free,
    .upload = host_copy,
    .download = host_copy,
    .copy = host_copy,
    .zero = host_zero,
    .synchronize = no_wait,
    .linear_forward = cpu::linear_forward,
    .linear_backward = cpu::linear_backward,
    .linear_forward_rows = cpu::linear_forward_rows,
    .linear_add_bias = cpu::linear_add_bias,
    .linear_weight_grad_rows = cpu::linear_weight_grad_rows,
    .linear_bias_grad = cpu::linear_bias_grad,
    .linear_input_grad_rows = cpu::linear_input_grad_rows,
    .relu_forward = cpu::relu_forward,
    .relu_backward = cpu::relu_backward,
    .add = cpu::add,
    .softmax_cross_entropy = cpu::softmax_cross_entropy,
    .conv2d_forward = cpu::conv2d_forward,
    .conv2d_backward = cpu::conv2d_backward,
    .conv2d_workspace = conv_workspace,
    .norm2d_forward = cpu::norm2d_forward,
    .norm2d_backward = cpu::norm2d_backward,
    .global_avg_pool_forward = cpu::global_avg_pool_forward,
    .global_avg_pool_backward = cpu::global_avg_pool_backward,
    .embedding_forward = cpu::embedding_forward,
    .embedding_backward = cpu::embedding_backward,
    .layernorm_forward = cpu::layernorm_forward,
    .layernorm_backward = cpu::layernorm_backward,
    .gelu_forward = cpu::gelu_forward,
    .gelu_backward = cpu::gelu_backward,
    .attention_forward = cpu::attention_forward,
    .attention_backward = cpu::attention_backward,
    .attention_scratch = attention_scratch,
    .sgd_momentum_update = cpu::sgd_momentum_update,
    .adamw_update = cpu::adamw_update,
};

}  // namespace

const Kernels& cpu_kernels() { return kCpu; }

}  // namespace dp
