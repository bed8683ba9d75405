// 2-D convolution on the GPU through cuDNN (NCHW, fp32 FMA arithmetic, cross-correlation like the CPU's
// im2col): the CUDA twin of kernels/cpu/conv.h, same parameters, device pointers. `workspace` is
// accepted for symmetry and ignored (may be null): cuDNN's workspace is managed internally.
#pragma once

#include <string>

#include "kernels/cpu/conv.h"  // dp::cpu::ConvShape

namespace dp::cuda {

using ConvShape = cpu::ConvShape;

// x (N, C, H, W), w (O, C, K, K), b (O), y (N, O, P, Q).
void conv2d_forward(const ConvShape& s, const float* x, const float* w, const float* b, float* y,
                    float* workspace = nullptr);
// dw (O, C, K, K) and db (O) are overwritten (zero when N = 0), or added to when `accumulate`;
// dx (N, C, H, W) is overwritten, or skipped when null. Algorithms are chosen deterministic where cuDNN
// offers one.
void conv2d_backward(const ConvShape& s, const float* x, const float* w, const float* dy, float* dx,
                     float* dw, float* db, float* workspace = nullptr, bool accumulate = false);

// "cuDNN 91900 (built with 91900)": the cuDNN actually loaded.
std::string cudnn_version();

}  // namespace dp::cuda
