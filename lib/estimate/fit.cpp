// fewest_devices (estimate.h): the job's strategy on n devices of one kind, for growing n, until every
// rank's buffers fit the kind's memory: doubling from 1 (for a pipeline, from the planner's smallest
// pipeline, lib/pipeline/smallest.cpp), then bisecting between the last n that did not fit and the first
// that did. A pipeline that cannot be planned on n devices does not fit there. A job of another strategy
// that needs more devices than it has also gets the smallest pipeline of the kind.
#include <fmt/format.h>

#include <algorithm>

#include "lib/cluster/cluster.h"
#include "lib/core/error.h"
#include "lib/estimate/estimate.h"
#include "lib/measure/pipeline_plan.h"
#include "lib/pipeline/plan_report.h"

namespace dp::estimate {
namespace {

// The job on n devices of kind d, all of speed 1 on one node, nothing emulated.
Job on_devices(const Job& job, const DeviceKind& d, int64_t n) {
  Job j = job;
  j.launch.ranks = n;
  ClusterSection& c = j.cluster;
  c.speeds.clear();
  c.memory_gb.clear();
  c.kinds = {d.name};
  c.kind_counts = {n};
  c.kind_speeds = {1.0};
  c.kind_memory_gb = {d.memory_gb};
  c.node_sizes.clear();
  c.emulate = EmulateSection{};
  j.parallel.cgp.groups.clear();
  j.parallel.pipeline.stages.clear();
  return j;
}

// The largest rank's buffers on n devices, or a negative value when the plan fails or a rank does not fit.
double peak_on(const Job& job, const ModelFacts& facts, const Timing& t, const DeviceKind& d, int64_t n) {
  if (n > facts.train_samples || n > job.train.global_batch) return -1;
  const Job j = on_devices(job, d, n);
  try {
    const Estimate e = estimate_job(j, facts, cluster_from_job(j), t, Options{});
    double most = 0;
    for (const RankEstimate& r : e.ranks) {
      if (!r.fits) return -1;
      most = std::max(most, r.memory.total());
    }
    return most;
  } catch (const Error&) {
    return -1;
  }
}

// The planner's smallest pipeline of the job's model on devices of kind d (devices 0: none up to `limit`).
pipeline::SmallestPipeline smallest_pipeline_on(const Job& job, const ModelFacts& facts, const Timing& t,
                                                const DeviceKind& d, int64_t limit) {
  Job pj = job;
  pj.parallel.strategy = StrategyKind::pipeline;
  const pipeline::BlockProfile profile = t.profile ? *t.profile : shape_profile(facts, profile_micro_batch(pj));
  pipeline::PlanOptions o;
  o.seed = job.job.seed;
  return pipeline::smallest_pipeline(
      job_pipeline_workload(pj, profile), [&](int n) { return pipeline_cluster(on_devices(pj, d, n)); }, int(limit), o);
}

// The smallest pipeline of kind d, up to `limit` devices, in f: for a job of another strategy.
void add_smallest_pipeline(Fit& f, const Job& job, const ModelFacts& facts, const Timing& t, const DeviceKind& d,
                           int64_t limit) {
  const pipeline::SmallestPipeline s = smallest_pipeline_on(job, facts, t, d, limit);
  f.pipeline_devices = s.devices;
  f.pipeline_note = s.devices > 0 ? fmt::format("{} {}: {}", s.devices, d.name,
                                                pipeline::plan_line(s.result, t.profile.has_value()))
                                  : fmt::format("no pipeline fits on up to {} {}", limit, d.name);
}

}  // namespace

Fit fewest_devices(const Job& job, const ModelFacts& facts, const Timing& t, const DeviceKind& d) {
  Fit f;
  f.device = d.name;
  const int64_t limit = std::min<int64_t>(4096, job.train.global_batch);
  const bool pipeline = job.parallel.strategy == StrategyKind::pipeline;
  int64_t lo = 0, hi = 1;  // lo: known not to fit (0: none tried)
  if (pipeline) {
    // No pipeline on fewer devices than the planner's smallest fits: start there.
    const int64_t smallest = smallest_pipeline_on(job, facts, t, d, limit).devices;
    if (smallest > 0) lo = smallest - 1, hi = smallest;
    else lo = hi = limit;
  }
  double peak = pipeline && lo == limit ? -1 : peak_on(job, facts, t, d, hi);
  while (peak < 0 && hi < limit) {
    lo = hi;
    hi = std::min(limit, hi * 2);
    peak = peak_on(job, facts, t, d, hi);
  }
  if (peak < 0) {
    f.note = fmt::format("does not fit on up to {} {} ({} GB each) under strategy {}", limit, d.name, d.memory_gb,
                         name_of(job.parallel.strategy));
    if (!pipeline) add_smallest_pipeline(f, job, facts, t, d, limit);
    return f;
  }
  while (hi - lo > 1) {
    const int64_t mid = (lo + hi) / 2;
    const double p = peak_on(job, facts, t, d, mid);
    if (p >= 0) hi = mid, peak = p;
    else lo = mid;
  }
  f.devices = hi;
  f.peak_bytes = peak;
  f.note = fmt::format("{} {} under strategy {}: the largest rank holds {:.1f} GB of {} GB", hi, d.name,
                       name_of(job.parallel.strategy), peak / 1e9, d.memory_gb);
  if (!pipeline && hi > job.launch.ranks) add_smallest_pipeline(f, job, facts, t, d, limit);
  return f;
}

}  // namespace dp::estimate
