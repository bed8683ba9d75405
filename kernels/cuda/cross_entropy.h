// Fused softmax cross-entropy on the GPU: the CUDA twin of kernels/cpu/cross_entropy.cpp. logits, labels
// and dlogits are device pointers; the sums come back to the host (the call waits for the device).
#pragma once

#include <cstdint>

#include "kernels/cpu/ops.h"  // dp::cpu::LossSums

namespace dp::cuda {

using LossSums = cpu::LossSums;

// logits (N, C), labels (N) in [0, C) (a label outside gives a NaN loss, is not counted as correct and
// gets a zero gradient row). When dlogits is not null it receives scale * d(sum of losses)/dlogits; it
// may alias logits.
// Deterministic: per-row values are summed in a fixed order.
LossSums softmax_cross_entropy(const float* logits, const int32_t* labels, float* dlogits, int64_t n,
                               int64_t classes, float scale);

}  // namespace dp::cuda
