// Token + position embedding of a GPT on the GPU: the CUDA twin of kernels/cpu/embedding.h.
// out[b, t, :] = wte[tokens[b, t], :] + wpe[t, :]. Dimension letters: B sequences, T positions, C channels.
#pragma once

#include <cstdint>

namespace dp::cuda {

// tokens (B, T) with ids in [0, V) (not checked: an id outside reads outside wte), wte (V, C),
// wpe (>= T, C), out (B, T, C).
void embedding_forward(const int32_t* tokens, const float* wte, const float* wpe, float* out, int64_t b,
                       int64_t t, int64_t c);
// Accumulates dout (B, T, C) into the tables: dwte[tokens[b, t]] += dout[b, t], dwpe[t] += dout[b, t]
// (the caller zeroes them first). dwpe is deterministic; dwte uses atomic adds, so when a token repeats
// its rows are summed in an unspecified order (results may differ in the last bits between runs).
void embedding_backward(const int32_t* tokens, const float* dout, float* dwte, float* dwpe, int64_t b,
                        int64_t t, int64_t c);

}  // namespace dp::cuda
