// One mini-batch of a pipeline plan played (sim.h), what simulate_pipeline and simulate_cgp_pipeline
// share: each stage's forward and backward per micro-batch, its slowest replica's (each replica's own
// share at its speed, as pipeline::evaluate prices it, times its slowness and noise), through the 1F1B
// schedule (pipeline::simulate: stages and links as resources, one operation at a time each); each
// stage's gradient allreduce and update start when its last backward ends, so a stage that drains early
// hides them behind the others' backward, and the mini-batch ends with the last of them.
#pragma once

#include <cstdint>
#include <vector>

#include "lib/pipeline/plan.h"
#include "lib/sim/sim.h"

namespace dp::sim {

// `rank_of`: the cluster rank of each rank the plan's stages name (a group's members); `slow`: every
// cluster rank's slowness this step. Adds the operations to `events`.
double play_minibatch(const pipeline::Plan& plan, const pipeline::Prediction& p, const std::vector<int>& rank_of,
                      const std::vector<double>& slow, Slowness& slowness, int64_t& events);

}  // namespace dp::sim
