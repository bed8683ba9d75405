// fewest_devices (estimate.h): the job's strategy on n devices of one kind, for growing n, until every
// rank's buffers fit the kind's memory: doubling from 1, then bisecting between the last n that did not
// fit and the first that did. A pipeline that cannot be planned on n devices does not fit there.
#include <fmt/format.h>

#include <algorithm>

#include "lib/cluster/cluster.h"
#include "lib/core/error.h"
#include "lib/estimate/estimate.h"

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

}  // namespace

Fit fewest_devices(const Job& job, const ModelFacts& facts, const Timing& t, const DeviceKind& d) {
  Fit f;
  f.device = d.name;
  const int64_t limit = std::min<int64_t>(4096, job.train.global_batch);
  int64_t lo = 0, hi = 1;  // lo: known not to fit (0: none tried)
  double peak = peak_on(job, facts, t, d, hi);
  while (peak < 0 && hi < limit) {
    lo = hi;
    hi = std::min(limit, hi * 2);
    peak = peak_on(job, facts, t, d, hi);
  }
  if (peak < 0) {
    f.note = fmt::format("does not fit on up to {} {} ({} GB each) under strategy {}", limit, d.name, d.memory_gb,
                         name_of(job.parallel.strategy));
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
  return f;
}

}  // namespace dp::estimate
