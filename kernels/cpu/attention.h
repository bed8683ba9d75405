// Causal multi-head self-attention of a GPT, from the fused q|k|v projection to the heads' outputs.
// Dimension letters: B sequences, T positions, C channels, NH heads of HS = C / NH channels.
#pragma once

#include <cstdint>

namespace dp::cpu {

// qkv (B, T, 3C): per position q (C) | k (C) | v (C), head h owning channels [h HS, (h+1) HS) of each.
// att (B, NH, T, T) receives the softmax probabilities softmax(q k^T / sqrt(HS)) with the causal mask
// (zero above the diagonal), kept for backward; out (B, T, C) = att v, heads side by side.
void attention_forward(const float* qkv, float* att, float* out, int64_t b, int64_t t, int64_t c,
                       int64_t nh);
// From dout (B, T, C): overwrites dqkv (B, T, 3C). scratch: T * T floats.
void attention_backward(const float* qkv, const float* att, const float* dout, float* dqkv, float* scratch,
                        int64_t b, int64_t t, int64_t c, int64_t nh);

}  // namespace dp::cpu
