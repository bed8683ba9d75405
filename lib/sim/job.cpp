// simulate_job and job_variability (job.h).
#include "lib/sim/job.h"

#include "lib/balance/job_balance.h"
#include "lib/core/error.h"
#include "lib/measure/pipeline_plan.h"

namespace dp::sim {

Variability job_variability(const Job& job, double noise) { return Variability{noise, job.cluster.emulate}; }

Result simulate_job(const Job& job, const estimate::ModelFacts& facts, const Cluster& c, const estimate::Timing& t,
                    const Variability& v, int64_t steps, uint64_t seed) {
  if (!t.profile)
    throw UsageError("--profile", "a simulation needs step times", "give --profile FILE or --device NAME");
  const pipeline::BlockProfile& profile = *t.profile;
  switch (job.parallel.strategy) {
    case StrategyKind::data: {
      DataSpec spec;
      spec.compute_s = [&](int64_t n) { return estimate::replica_compute_seconds(job, facts, profile, double(n)); };
      spec.global_batch = job.train.global_batch;
      spec.balance = balance_options(job, c.size());
      spec.gradient_bytes = 4.0 * double(facts.parameters);
      spec.comm = job.parallel.comm;
      spec.update_s = estimate::model_update_seconds(facts, profile);
      return simulate_data(c, spec, v, steps, seed);
    }
    case StrategyKind::cgp: {
      const cgp::Workload w =
          cgp::job_workload(job, facts.parameters, estimate::cgp_sample_seconds(job, facts, c, t));
      return simulate_cgp(c, w, estimate::cgp_grouping(job, facts, c, t), v, steps, seed);
    }
    case StrategyKind::pipeline: {
      const PipelineChoice choice = choose_pipeline_plan(job, job_pipeline_workload(job, profile), c);
      return simulate_pipeline(c, choice.result.plan, choice.result.prediction, job.train.global_batch, v, steps,
                               seed);
    }
    case StrategyKind::automatic: break;
  }
  throw UsageError(job.source + " [parallel] strategy", "\"auto\" is not one strategy to simulate",
                   "simulate each with --set parallel.strategy=data (cgp, pipeline)");
}

}  // namespace dp::sim
