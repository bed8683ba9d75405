// 2-D convolution on the CPU, NCHW, square kernel, any stride and padding, with bias. Two implementations
// with one signature: the production path (conv.cpp: oneDNN's convolutions, which pick their kernels for
// the CPU's instruction set at run time, where the build has oneDNN) and the reference (conv_gemm.cpp: one
// sample at a time through OpenBLAS sgemm), which the production path is tested against and falls back to.
// Dimension letters: N samples, C input channels, O output channels, H x W input size, P x Q output size,
// K kernel size.
#pragma once

#include <cstdint>
#include <string>

namespace dp::cpu {

struct ConvShape {
  int64_t n = 0;                    // samples
  int64_t in_channels = 0;          // C
  int64_t height = 0, width = 0;    // H, W (input)
  int64_t out_channels = 0;         // O
  int64_t kernel = 3;               // K
  int64_t stride = 1;
  int64_t pad = 0;                  // zeros on every side
  int64_t out_height() const { return (height + 2 * pad - kernel) / stride + 1; }  // P
  int64_t out_width() const { return (width + 2 * pad - kernel) / stride + 1; }    // Q
};

// x (N, C, H, W), w (O, C, K, K), b (O), y (N, O, P, Q); workspace: conv2d_workspace(shape) floats
// (independent of n; may be 0, and then the pointer may be null).
void conv2d_forward(const ConvShape& s, const float* x, const float* w, const float* b, float* y,
                    float* workspace);
// dw (O, C, K, K) and db (O) are overwritten (zero when N = 0), or added to when `accumulate`;
// dx (N, C, H, W) is overwritten, or skipped when null.
void conv2d_backward(const ConvShape& s, const float* x, const float* w, const float* dy, float* dx,
                     float* dw, float* db, float* workspace, bool accumulate = false);
int64_t conv2d_workspace(const ConvShape& s);
// What the production path runs: "oneDNN 2.6.3 (jit:avx512_core)" or "sgemm per kernel tap (reference)".
std::string conv2d_implementation();

// The reference, same contract; its workspace is conv2d_gemm_workspace(shape) floats.
void conv2d_forward_gemm(const ConvShape& s, const float* x, const float* w, const float* b, float* y,
                         float* workspace);
void conv2d_backward_gemm(const ConvShape& s, const float* x, const float* w, const float* dy, float* dx,
                          float* dw, float* db, float* workspace, bool accumulate = false);
int64_t conv2d_gemm_workspace(const ConvShape& s);

// The threads the production path uses on the calling thread (OpenMP's, under oneDNN).
void set_conv_threads(int threads);

}  // namespace dp::cpu
