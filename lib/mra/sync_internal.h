// Shared by the GradientSync implementations of lib/mra (not part of its public face, mra.h).
#pragma once

#include <chrono>

#include "lib/comm/collectives.h"
#include "lib/mra/mra.h"

namespace dp {

using sync_clock = std::chrono::steady_clock;
inline double ms_between(sync_clock::time_point a, sync_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

std::unique_ptr<GradientSync> make_plain_sync(CollectiveAlgorithm algorithm, Communicator& comm,
                                              std::span<float> params, std::span<float> grads,
                                              const std::vector<ParamRange>& layers);
std::unique_ptr<GradientSync> make_mra_sync(const GradSyncOptions& options, Communicator& comm,
                                            std::span<float> params, std::span<float> grads,
                                            const std::vector<ParamRange>& layers);

}  // namespace dp
