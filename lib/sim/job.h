// A job's strategy simulated (sim.h) on the inputs `dptrain estimate` predicts it from: the same cluster
// and step times, the same shares, grouping and pipeline plan (lib/estimate's pieces), so that the
// simulator without variability replays the analytical model and with it shows what the model averages
// away. The variability is the job's [cluster.emulate] (random walk, a slow window) with per-operation
// noise on top.
#pragma once

#include <cstdint>

#include "lib/estimate/estimate.h"
#include "lib/sim/sim.h"

namespace dp::sim {

// The job's [cluster.emulate] random walk and slow window, and `noise` per operation.
Variability job_variability(const Job& job, double noise);

// CGP of pipelines' simulation inputs from the estimate's terms of `job` (hybrid_terms).
HybridSpec hybrid_spec(const Job& job, const estimate::HybridTerms& h);

// `steps` steps (CGP: steps' worth of samples; a pipeline: mini-batches) of the job's strategy on `c`
// with the step times of `t` (required), replaying what `priced` (estimate_job of the same inputs) priced:
// its shares, CGP grouping or pipeline plan.
Result simulate_estimate(const Job& job, const estimate::ModelFacts& facts, const Cluster& c,
                         const estimate::Timing& t, const estimate::Estimate& priced, const Variability& v,
                         int64_t steps, uint64_t seed);
// The same, estimating first. Throws InputError when the strategy's plan cannot be made.
Result simulate_job(const Job& job, const estimate::ModelFacts& facts, const Cluster& c, const estimate::Timing& t,
                    const Variability& v, int64_t steps, uint64_t seed);

}  // namespace dp::sim
