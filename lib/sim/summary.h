// The simulators' shared ending: a result's median and mean step and its samples per second.
#pragma once

#include "lib/sim/sim.h"

namespace dp::sim {

// Fills median_step_s, mean_step_s and samples_per_s (`samples` over the steps' total time).
void summarize(Result& r, double samples);

}  // namespace dp::sim
