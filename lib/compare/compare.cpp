// compare_strategies (compare.h): the candidates of a job, each predicted by estimate_job on the same
// cluster and timing, charged CGP's accuracy cost, ranked, and explained (the resource bounding each).
#include "lib/compare/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "lib/cluster/cluster.h"
#include "lib/core/error.h"
#include "lib/pipeline/plan_internal.h"

namespace dp::compare {

// Measured with tests/bench/cgp.sh (tests/bench/README.md, "CGP against synchronous training", commit
// bc3fbd1, 2 repetitions): steps to the target accuracy of a CGP run over those of the synchronous run
// of the same job (the fraction of each run's steps done when its evaluation first reached the target),
// against the model's staleness in local steps of the run's grouping (plan --json): the solver's groups
// under imbalance (s = 3.9: 0.95-1.01x), six lone groups without a bound (s = 13.1: 1.12-1.27x), and two
// nodes on a 1 Gbit/s link exchanging every 4 steps (s = 4 x 4 = 16: 1.23-1.26x). The least-squares slope
// through 1 at s = 0 is 0.0146 extra steps per step of staleness. Evaluations every 45-47 steps bound each
// point's resolution to about a tenth.
const double kStalenessStepCost = 0.0146;

namespace {

Candidate make(const Job& job, std::string name, std::vector<std::string> sets) {
  Candidate c{std::move(name), std::move(sets), {}};
  c.job = parse_job(job_to_toml(job), job.source, c.sets);
  c.job.warnings.clear();
  return c;
}

std::string speed_text(double s) { return fmt::format("{:.2f}", s); }

std::string ms(double s) { return fmt::format("{:.2f} ms", s * 1e3); }

// The slowest link of the ring over every rank (the ring lib/pipeline's cost model prices).
std::string slowest_ring_link(const Cluster& c) {
  int a = 0, b = c.size() > 1 ? 1 : 0;
  double gbps = 0;
  for (int i = 0; i < c.size() && c.size() > 1; ++i) {
    const int j = (i + 1) % c.size();
    const Link l = c.link(i, j);
    if (gbps == 0 || l.gbps < gbps) gbps = l.gbps, a = i, b = j;
  }
  return fmt::format("ranks {}-{} at {:g} Gbit/s", a, b, gbps);
}

std::string data_bound(const Row& row, const Cluster& c) {
  const estimate::Estimate& e = row.estimate;
  if (e.bound == "communication")
    return fmt::format("the allreduce: {} of {} a step after backward, over its slowest link ({})", ms(e.comm_s),
                       ms(e.step_s), slowest_ring_link(c));
  if (e.bound == "update") return fmt::format("the optimizer's update: {} of {}", ms(e.update_s), ms(e.step_s));
  const estimate::RankEstimate* slowest = &e.ranks.front();
  double fastest_s = slowest->compute_s;
  for (const estimate::RankEstimate& r : e.ranks) {
    if (r.compute_s > slowest->compute_s) slowest = &r;
    fastest_s = std::min(fastest_s, r.compute_s);
  }
  const bool equal = row.candidate.job.parallel.balance.mode == BalanceMode::equal;
  if (equal && slowest->compute_s > 1.05 * fastest_s)
    return fmt::format("a slow device: rank {} (speed {}) computes its equal share in {}, the fastest in {}",
                       slowest->rank, speed_text(c.rank(slowest->rank).speed), ms(slowest->compute_s), ms(fastest_s));
  return fmt::format("compute: {} of {} a step, shared by speed", ms(e.compute_s), ms(e.step_s));
}

std::string pipeline_bound(const Row& row) {
  const estimate::Estimate& e = row.estimate;
  if (e.bound == "bubble") return fmt::format("the bubble: {} of {} a mini-batch waits on other stages and links",
                                              ms(e.bubble_s), ms(e.step_s));
  if (e.bound == "communication")
    return fmt::format("the stages' gradient allreduce after the pipeline drains: {} of {}", ms(e.comm_s), ms(e.step_s));
  if (e.bound == "update") return fmt::format("the update: {} of {}", ms(e.update_s), ms(e.step_s));
  return fmt::format("the busiest stage's compute: {} of {} a mini-batch", ms(e.compute_s), ms(e.step_s));
}

std::string cgp_bound(const Row& row) {
  const estimate::Estimate& e = row.estimate;
  const std::string cost = fmt::format("staleness {:.1f} costs {:.2f}x the steps", e.staleness, row.steps_factor);
  if (e.server_load >= 0.9) return fmt::format("the global model's server (offered load {:.2f}); {}", e.server_load, cost);
  return fmt::format("its groups' cycles (compute, allreduce, exchange); {}", cost);
}

void evaluate(Row& row, const estimate::ModelFacts& facts, const Cluster& c, const estimate::Timing& timing,
              int64_t steps) {
  const Job& job = row.candidate.job;
  try {
    row.estimate = estimate::estimate_job(job, facts, c, timing, estimate::Options{});
  } catch (const Error& e) {
    row.error = e.what();
    return;
  }
  row.planned = true;
  const estimate::Estimate& e = row.estimate;
  for (const estimate::RankEstimate& r : e.ranks) {
    if (r.memory.total() > row.peak_bytes) row.peak_bytes = r.memory.total(), row.peak_rank = r.rank;
    if (!r.fits) row.fits = false;
  }
  row.peak_limit_bytes = c.rank(row.peak_rank).memory_gb * 1e9;
  if (job.parallel.strategy == StrategyKind::cgp || job.parallel.strategy == StrategyKind::cgp_pipeline)
    row.steps_factor = 1.0 + kStalenessStepCost * e.staleness * double(job.parallel.cgp.exchange_every);
  row.time_s = double(steps) * row.steps_factor * e.step_s;
  switch (job.parallel.strategy) {
    case StrategyKind::data: row.bound = data_bound(row, c); break;
    case StrategyKind::cgp: row.bound = cgp_bound(row); break;
    case StrategyKind::pipeline: row.bound = pipeline_bound(row); break;
    case StrategyKind::cgp_pipeline: row.bound = e.bound; break;  // the model names the slowest group's cycle
    case StrategyKind::automatic: break;  // candidates name their strategy
  }
  if (!row.fits)
    row.bound = fmt::format("memory: rank {} needs {:.1f} MB of buffers, its device has {:.1f} MB", row.peak_rank,
                            row.peak_bytes * 1e-6, row.peak_limit_bytes * 1e-6);
}

bool usable(const Row& r) { return r.planned && r.fits && r.time_s > 0; }

// A data-parallel row whose ranks do not fit, with the memory levers estimate models: [train] micro_batch
// (each share run in parts of that many samples, gradients accumulated) and recompute = "all" (each block
// keeps only its input and runs its forward again in backward). The fastest setting that fits replaces
// the row; none fitting leaves it as it is.
void with_levers(Row& row, const estimate::ModelFacts& facts, const Cluster& c, const estimate::Timing& timing,
                 int64_t steps) {
  if (!row.planned || row.fits || row.candidate.job.parallel.strategy != StrategyKind::data) return;
  int64_t share = 1;
  for (const estimate::RankEstimate& r : row.estimate.ranks) share = std::max(share, r.samples);
  std::optional<Row> best;
  for (const char* recompute : {"none", "all"})
    for (int64_t micro = recompute == std::string("all") ? share : share / 2; micro >= 1; micro /= 2) {
      std::vector<std::string> levers{fmt::format("train.micro_batch={}", micro == share ? 0 : micro),
                                      std::string("train.recompute=") + recompute};
      estimate::ModelFacts levered = facts;  // rank 0 evaluates at most a micro-batch at once (facts.cpp)
      if (micro < share) levered.eval_chunk = std::min(levered.eval_chunk, micro);
      Row r;
      r.candidate = make(row.candidate.job,
                         row.candidate.name + (micro < share ? fmt::format(", micro-batches of {}", micro) : "") +
                             (recompute == std::string("all") ? ", recomputing" : ""),
                         levers);
      r.candidate.sets = row.candidate.sets;
      r.candidate.sets.insert(r.candidate.sets.end(), levers.begin(), levers.end());
      evaluate(r, levered, c, timing, steps);
      if (usable(r) && (!best || r.time_s < best->time_s)) best = std::move(r);
    }
  if (best) row = std::move(*best);
}

std::string why_text(const Comparison& c) {
  if (c.winner < 0) return "nothing fits: every strategy's plan failed or a rank's buffers exceed its memory";
  const Row& w = c.rows[size_t(c.winner)];
  std::string s = fmt::format("{} is predicted fastest: {:.1f} s for {} steps ({:.0f} samples/s), bound by {}",
                              w.candidate.name, w.time_s, c.steps, w.estimate.samples_per_s, w.bound);
  for (const Row& r : c.rows)
    if (&r != &w && usable(r)) {
      s += fmt::format(". Next: {}, {:.2f}x its time, bound by {}", r.candidate.name, r.time_s / w.time_s, r.bound);
      break;
    }
  return s;
}

}  // namespace

std::vector<Candidate> candidates(const Job& job) {
  std::vector<Candidate> out;
  for (const char* balance : {"equal", "idat"})
    for (const char* comm : {"ring", "mra"})
      out.push_back(make(job, fmt::format("data, {} shares, {}", balance == std::string("idat") ? "I-DAT" : "equal",
                                          comm == std::string("mra") ? "MRA" : "ring allreduce"),
                         {"parallel.strategy=data", std::string("parallel.balance.mode=") + balance,
                          std::string("parallel.comm.algorithm=") + comm}));
  out.push_back(make(job, "CGP, solver's groups, I-DAT inside",
                     {"parallel.strategy=cgp", "parallel.balance.mode=idat", "parallel.cgp.groups=[]"}));
  // A pipeline's stages have their own micro-batches and recomputation ([parallel.pipeline]).
  out.push_back(make(job, "pipeline, planner's plan",
                     {"parallel.strategy=pipeline", "train.micro_batch=0", "train.recompute=none"}));
  // CGP of pipelines, a group per node: on one node it is the pipeline.
  if (cluster_from_job(job).nodes() > 1)
    out.push_back(make(job, "CGP of pipelines, a group per node",
                       {"parallel.strategy=cgp-pipeline", "parallel.cgp.groups=[]", "train.micro_batch=0",
                        "train.recompute=none"}));
  return out;
}

Comparison compare_strategies(const Job& job, const estimate::ModelFacts& facts, const Cluster& cluster,
                              const estimate::Timing& timing) {
  if (!timing.profile)
    throw UsageError("--compare", "needs step times", "give --profile FILE, or let the blocks be timed here");
  Comparison c;
  c.job = job.job.name;
  c.model = facts.describe;
  c.cluster = cluster.describe();
  c.timing_basis = timing.basis;
  const int64_t per_epoch = (facts.train_samples + job.train.global_batch - 1) / job.train.global_batch;
  c.steps = job.train.steps > 0 ? job.train.steps : job.train.epochs * per_epoch;
  for (Candidate& cand : candidates(job)) {
    Row row;
    row.candidate = std::move(cand);
    evaluate(row, facts, cluster, timing, c.steps);
    with_levers(row, facts, cluster, timing, c.steps);
    c.rows.push_back(std::move(row));
  }
  std::stable_sort(c.rows.begin(), c.rows.end(), [](const Row& a, const Row& b) {
    if (usable(a) != usable(b)) return usable(a);
    return usable(a) && a.time_s < b.time_s;
  });
  if (!c.rows.empty() && usable(c.rows.front())) c.winner = 0;
  c.why = why_text(c);
  return c;
}

}  // namespace dp::compare
