// simulate_job, simulate_estimate, hybrid_spec and job_variability (job.h).
#include "lib/sim/job.h"

#include "lib/balance/job_balance.h"
#include "lib/core/error.h"

namespace dp::sim {

Variability job_variability(const Job& job, double noise) { return Variability{noise, job.cluster.emulate}; }

HybridSpec hybrid_spec(const Job& job, const estimate::HybridTerms& h) {
  HybridSpec spec;
  spec.plan = h.pipeline.result.plan;
  spec.groups = h.groups;
  spec.group_batch = h.group_batch;
  spec.global_batch = job.train.global_batch;
  spec.exchange_every = h.exchange_every;
  spec.hold_staleness = job.parallel.cgp.max_staleness;
  return spec;
}

Result simulate_estimate(const Job& job, const estimate::ModelFacts& facts, const Cluster& c,
                         const estimate::Timing& t, const estimate::Estimate& priced, const Variability& v,
                         int64_t steps, uint64_t seed) {
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
      DP_CHECK(!priced.cgp_grouping.empty(), "a CGP estimate with its grouping");
      const cgp::Workload w =
          cgp::job_workload(job, facts.parameters, estimate::cgp_sample_seconds(job, facts, c, t));
      return simulate_cgp(c, w, priced.cgp_grouping, v, steps, seed);
    }
    case StrategyKind::pipeline: {
      DP_CHECK(priced.pipeline_plan.has_value(), "a pipeline estimate with its plan");
      // The stages' times at the cluster's own speeds: the slow window `v` holds is played here, not
      // priced into the plan's prediction as well.
      return simulate_pipeline(c, priced.pipeline_plan->plan, estimate::pipeline_on_cluster(job, c, t, priced),
                               job.train.global_batch, v, steps, seed);
    }
    case StrategyKind::cgp_pipeline:
      return simulate_cgp_pipeline(c, hybrid_spec(job, estimate::hybrid_terms(job, facts, c, t)), v, steps, seed);
    case StrategyKind::automatic: break;
  }
  throw UsageError(job.source + " [parallel] strategy", "\"auto\" is not one strategy to simulate",
                   "simulate each with --set parallel.strategy=data (cgp, pipeline)");
}

Result simulate_job(const Job& job, const estimate::ModelFacts& facts, const Cluster& c, const estimate::Timing& t,
                    const Variability& v, int64_t steps, uint64_t seed) {
  if (!t.profile)
    throw UsageError("--profile", "a simulation needs step times", "give --profile FILE or --device NAME");
  return simulate_estimate(job, facts, c, t, estimate::estimate_job(job, facts, c, t, estimate::Options{}), v,
                           steps, seed);
}

}  // namespace dp::sim
