// The CUDA backend's kernel table: device memory and the kernels of this folder (the twin of
// kernels/cpu/kernel_table.cpp).
#include "kernels/kernel_table.h"

#include "kernels/cuda/activation.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/conv.h"
#include "kernels/cuda/cross_entropy.h"
#include "kernels/cuda/embedding.h"
#include "kernels/cuda/gelu.h"
#include "kernels/cuda/layernorm.h"
#include "kernels/cuda/linear.h"
#include "kernels/cuda/memory.h"
#include "kernels/cuda/norm.h"
#include "kernels/cuda/optimizer.h"
#include "kernels/cuda/pool.h"

namespace dp {
namespace {

void zero_bytes(void* dst, size_t bytes) { cuda::fill_bytes(dst, 0, bytes); }
int64_t conv_workspace(const cpu::ConvShape&) { return 0; }  // cuDNN's workspace is the backend's own

const Kernels kCuda{
    .name = "cuda",
    .host_memory = false,
    .alloc = cuda::device_alloc,
    .free = cuda::device_free,
    .upload = cuda::copy_to_device,
    .download = cuda::copy_to_host,
    .copy = cuda::copy_on_device,
    .zero = zero_bytes,
    .synchronize = cuda::synchronize,
    .linear_forward = cuda::linear_forward,
    .linear_backward = cuda::linear_backward,
    .linear_forward_rows = cuda::linear_forward_rows,
    .linear_add_bias = cuda::linear_add_bias,
    .linear_weight_grad_rows = cuda::linear_weight_grad_rows,
    .linear_bias_grad = cuda::linear_bias_grad,
    .linear_input_grad_rows = cuda::linear_input_grad_rows,
    .relu_forward = cuda::relu_forward,
    .relu_backward = cuda::relu_backward,
    .add = cuda::add,
    .softmax_cross_entropy = cuda::softmax_cross_entropy,
    .conv2d_forward = cuda::conv2d_forward,
    .conv2d_backward = cuda::conv2d_backward,
    .conv2d_workspace = conv_workspace,
    .norm2d_forward = cuda::norm2d_forward,
    .norm2d_backward = cuda::norm2d_backward,
    .global_avg_pool_forward = cuda::global_avg_pool_forward,
    .global_avg_pool_backward = cuda::global_avg_pool_backward,
    .embedding_forward = cuda::embedding_forward,
    .embedding_backward = cuda::embedding_backward,
    .layernorm_forward = cuda::layernorm_forward,
    .layernorm_backward = cuda::layernorm_backward,
    .gelu_forward = cuda::gelu_forward,
    .gelu_backward = cuda::gelu_backward,
    .attention_forward = cuda::attention_forward,
    .attention_backward = cuda::attention_backward,
    .attention_scratch = cuda::attention_scratch_floats,
    .sgd_momentum_update = cuda::sgd_momentum_update,
    .adamw_update = cuda::adamw_update,
};

}  // namespace

const Kernels& cuda_kernels() { return kCuda; }

}  // namespace dp
