// Optimizer updates on the GPU over flat device ranges: the CUDA twin of kernels/cpu/optimizer.cpp.
#pragma once

#include <cstdint>

namespace dp::cuda {

// v = momentum * v + (g + wd * p);  p -= lr * v          (PyTorch's SGD, dampening 0)
void sgd_momentum_update(float* p, const float* g, float* v, int64_t count, float lr, float momentum,
                         float weight_decay);
// AdamW (Loshchilov & Hutter), step t >= 1, bias-corrected; p -= lr * (mhat / (sqrt(vhat) + eps) + wd * p)
void adamw_update(float* p, const float* g, float* m, float* v, int64_t count, float lr, float beta1,
                  float beta2, float eps, float weight_decay, int64_t t);

}  // namespace dp::cuda
