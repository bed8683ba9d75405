// scale_strategies and job_at (scaling.h).
#include "lib/compare/scaling.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "lib/core/error.h"
#include "lib/measure/pipeline_plan.h"
#include "lib/sim/job.h"

namespace dp::compare {

Job job_at(const Job& job, int64_t workers, uint64_t seed) {
  if (!job.cluster.links.gbps.empty())
    throw UsageError("--workers", "[cluster.links] gbps is a matrix of the job's own ranks: it cannot be drawn to "
                     "other sizes", "describe the links by level (node_gbps, rack_gbps, cross_gbps)");
  const Cluster drawn = draw_cluster(job, int(workers), seed);
  Job j = job;
  j.launch.ranks = workers;
  j.train.global_batch = std::max<int64_t>(workers, job.train.global_batch * workers / job.launch.ranks);
  ClusterSection& c = j.cluster;
  c.kinds.clear(), c.kind_counts.clear(), c.kind_speeds.clear(), c.kind_memory_gb.clear();
  c.speeds.clear(), c.memory_gb.clear();
  // Memories only when every drawn rank has one ([cluster] memory_gb takes positive values).
  const bool memory = std::all_of(drawn.ranks().begin(), drawn.ranks().end(),
                                  [](const ClusterRank& r) { return r.memory_gb > 0; });
  for (const ClusterRank& r : drawn.ranks()) {
    c.speeds.push_back(r.speed);
    if (memory) c.memory_gb.push_back(r.memory_gb);
  }
  // Keys that name the job's own ranks: an emulated slowdown every rank shares stays every rank's.
  const std::vector<double>& slow = job.cluster.emulate.slowdown;
  const bool uniform = !slow.empty() && std::all_of(slow.begin(), slow.end(), [&](double f) { return f == slow[0]; });
  c.emulate.slowdown = uniform ? std::vector<double>(size_t(workers), slow[0]) : std::vector<double>{};
  if (c.emulate.memory_gb.size() > 1) c.emulate.memory_gb.clear();
  if (c.emulate.fluctuate_rank >= workers) c.emulate.fluctuate_rank = -1;
  j.parallel.cgp.groups.clear();
  j.parallel.balance.speeds.clear();
  j.parallel.pipeline.stages.clear();
  Job valid = parse_job(job_to_toml(j), job.source);
  valid.warnings.clear();
  return valid;
}

Scaling scale_strategies(const Job& job, const estimate::ModelFacts& facts, const estimate::Timing& timing,
                         const std::vector<int64_t>& workers, uint64_t seed, double noise, int64_t steps) {
  Scaling s;
  s.workers = workers;
  s.noise = noise, s.steps = steps, s.seed = seed;
  s.timing_basis = timing.basis;
  for (const Candidate& c : candidates(job)) s.strategies.push_back(c.name);
  for (int64_t n : workers) {
    // At the job's own rank count, the job's own cluster (its ranks' order, links and cluster file as
    // they are), so the simulation can be set beside the job's runs; at any other, one drawn from its kinds.
    const Job sized = n == job.launch.ranks ? job : job_at(job, n, seed);
    const Cluster cluster = pipeline_cluster(sized);
    const sim::Variability v = sim::job_variability(sized, noise);
    std::vector<ScalingCell> row;
    for (const Candidate& cand : candidates(sized)) {
      ScalingCell cell;
      const auto t0 = std::chrono::steady_clock::now();
      try {
        const estimate::Estimate e = estimate::estimate_job(cand.job, facts, cluster, timing, estimate::Options{});
        for (const estimate::RankEstimate& r : e.ranks) cell.fits = cell.fits && r.fits;
        cell.predicted = e.samples_per_s;
        cell.simulated = sim::simulate_estimate(cand.job, facts, cluster, timing, e, v, steps, seed).samples_per_s;
        cell.planned = true;
      } catch (const Error& e) {
        cell.error = e.what();
      }
      cell.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      row.push_back(std::move(cell));
    }
    s.cells.push_back(std::move(row));
  }
  return s;
}

}  // namespace dp::compare
