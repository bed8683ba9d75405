// Token + position embedding of a GPT: out[b, t, :] = wte[tokens[b, t], :] + wpe[t, :].
// Dimension letters: B sequences, T positions, C channels.
#pragma once

#include <cstdint>

namespace dp::cpu {

// tokens (B, T) with ids in [0, V), wte (V, C), wpe (>= T, C), out (B, T, C).
void embedding_forward(const int32_t* tokens, const float* wte, const float* wpe, float* out, int64_t b,
                       int64_t t, int64_t c);
// Scatters dout (B, T, C) into the tables: dwte[tokens[b, t]] += dout[b, t], dwpe[t] += dout[b, t].
// Accumulates (the caller zeroes the tables first; a tied LM head adds its gradient to the same dwte).
void embedding_backward(const int32_t* tokens, const float* dout, float* dwte, float* dwpe, int64_t b,
                        int64_t t, int64_t c);

}  // namespace dp::cpu
