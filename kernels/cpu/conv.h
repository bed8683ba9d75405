// 2-D convolution on the CPU, NCHW, square kernel, any stride and padding, with bias: one sample at a
// time through a reused workspace and OpenBLAS sgemm (conv.cpp describes the layout). Dimension letters:
// N samples, C input channels, O output channels, H x W input size, P x Q output size, K kernel size.
#pragma once

#include <cstdint>

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
  // Floats of workspace the forward and backward need (independent of n).
  int64_t workspace() const;
};

// x (N, C, H, W), w (O, C, K, K), b (O), y (N, O, P, Q); workspace: shape.workspace() floats.
void conv2d_forward(const ConvShape& s, const float* x, const float* w, const float* b, float* y,
                    float* workspace);
// dw (O, C, K, K) and db (O) are overwritten (zero when N = 0), or added to when `accumulate`;
// dx (N, C, H, W) is overwritten, or skipped when null.
void conv2d_backward(const ConvShape& s, const float* x, const float* w, const float* dy, float* dx,
                     float* dw, float* db, float* workspace, bool accumulate = false);

}  // namespace dp::cpu
