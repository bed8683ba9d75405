// Causal multi-head self-attention of a GPT on the GPU: the CUDA twin of kernels/cpu/attention.h, same
// parameters, device pointers. Dimension letters: B sequences, T positions, C channels, NH heads of
// HS = C / NH channels.
#pragma once

#include <cstdint>

namespace dp::cuda {

// qkv (B, T, 3C): per position q (C) | k (C) | v (C), head h owning channels [h HS, (h+1) HS) of each.
// att (B, NH, T, T) receives softmax(q k^T / sqrt(HS)) with the causal mask (exact zeros above the
// diagonal), kept for backward; out (B, T, C) = att v, heads side by side.
void attention_forward(const float* qkv, float* att, float* out, int64_t b, int64_t t, int64_t c,
                       int64_t nh);
// From dout (B, T, C): overwrites dqkv (B, T, 3C). NOTE: unlike the CPU's T * T floats, scratch must
// hold attention_scratch_floats(t, nh) = NH * T * T floats (all heads of one sequence at a time).
void attention_backward(const float* qkv, const float* att, const float* dout, float* dqkv, float* scratch,
                        int64_t b, int64_t t, int64_t c, int64_t nh);
inline int64_t attention_scratch_floats(int64_t t, int64_t nh) { return nh * t * t; }

}  // namespace dp::cuda
