// estimate_job (estimate.h): the per-rank estimate of the job's strategy (data parallel here; CGP and
// pipeline in strategies.cpp), then what follows from it for every rank (resident size, whether it fits)
// and for the job (FLOPs, epoch and job time, the scheduler's request, the fewest devices that fit).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "lib/balance/balance.h"
#include "lib/core/error.h"
#include "lib/estimate/estimate_internal.h"
#include "lib/pipeline/plan_internal.h"

namespace dp::estimate {
namespace detail {

double blocks_seconds(const pipeline::BlockProfile& p, int first, int last, double n) {
  double s = 0;
  for (int b = first; b <= last; ++b) {
    const pipeline::BlockRow& r = p.blocks[size_t(b)];
    const double fixed = r.forward_fixed_ms + r.backward_fixed_ms;
    s += fixed + n * (r.forward_ms + r.backward_ms - fixed) / double(p.micro_batch);
  }
  return s * 1e-3;
}

double step_extra_seconds(const pipeline::BlockProfile& p, double n, double parts) {
  return 1e-3 * (parts * p.step_extra_fixed_ms + n * (p.step_extra_ms - p.step_extra_fixed_ms) / double(p.micro_batch));
}

// A data-parallel replica's forward and backward of n samples (and the step's work besides its blocks): in ceil(n / [train] micro_batch) parts, each
// paying the blocks' fixed times, and with [train] recompute = "all" once more the forward of every block
// that saves activations (what Model::run_blocks reruns).
double replica_seconds(const Job& job, const ModelFacts& facts, const pipeline::BlockProfile& p, double n) {
  const int64_t micro = job.train.micro_batch;
  const double parts = micro > 0 && n > double(micro) ? std::ceil(n / double(micro)) : 1.0;
  const bool recompute = job.train.recompute == TrainRecompute::all;
  double s = 0;
  for (size_t b = 0; b < facts.blocks.size(); ++b) {
    const pipeline::BlockRow& r = p.blocks[b];
    double fixed = r.forward_fixed_ms + r.backward_fixed_ms, all = r.forward_ms + r.backward_ms;
    if (recompute && facts.blocks[b].saved_floats > 0) fixed += r.forward_fixed_ms, all += r.forward_ms;
    s += parts * fixed + n * (all - fixed) / double(p.micro_batch);
  }
  return s * 1e-3 + step_extra_seconds(p, n, parts);
}

double update_seconds(const pipeline::BlockProfile& p, int first, int last) {
  double s = 0;
  for (int b = first; b <= last; ++b) s += p.blocks[size_t(b)].update_ms;
  return s * 1e-3;
}

std::vector<int64_t> shares_of(int64_t batch, const std::vector<double>& speeds, bool by_speed) {
  const std::vector<double> equal(speeds.size(), 1.0);
  return divide_batch(batch, by_speed ? speeds : equal, 0);
}

double sync_tail_seconds(const Job& job, const Cluster& c, const std::vector<int>& ranks, double bytes) {
  return estimate::sync_tail_seconds(job.parallel.comm, bytes, [&](double b) {
    return pipeline::detail::ring_allreduce_seconds(c, ranks, b);
  });
}

DataStepTail data_step_tail(const Job& job, const ModelFacts& facts, const Cluster& c, const std::vector<int>& ranks,
                            const pipeline::BlockProfile& p) {
  const bool sharded = job.parallel.comm.algorithm == CommAlgorithm::mra && job.parallel.comm.sharded_update;
  return {sync_tail_seconds(job, c, ranks, 4.0 * double(facts.parameters)),
          update_seconds(p, 0, int(facts.blocks.size()) - 1) / double(sharded ? ranks.size() : 1)};
}

void data_parallel_ranks(const Job& job, const ModelFacts& facts, const Cluster& c, const Timing& t,
                         const std::vector<int>& ranks, int64_t batch, const std::string& role,
                         std::vector<RankEstimate>& out, double& step_s) {
  std::vector<double> speeds;
  for (int r : ranks) speeds.push_back(c.rank(r).speed);
  const bool idat = job.parallel.balance.mode == BalanceMode::idat;
  const std::vector<int64_t> shares = shares_of(batch, speeds, idat);
  // I-DAT starts from [parallel.balance] speeds (or equal shares) before it has measured any: buffers
  // only grow, so they hold the larger of the first and the balanced share.
  std::vector<double> first_speeds(ranks.size(), 1.0);
  const std::vector<double>& given = job.parallel.balance.speeds;
  for (size_t i = 0; i < ranks.size() && given.size() == size_t(c.size()); ++i) first_speeds[i] = given[size_t(ranks[i])];
  const std::vector<int64_t> first = shares_of(batch, first_speeds, idat);
  const bool sharded = job.parallel.comm.algorithm == CommAlgorithm::mra && job.parallel.comm.sharded_update;
  const int64_t k = int64_t(ranks.size());
  const int64_t state = sharded ? (facts.parameters + k - 1) / k : facts.parameters;
  double slowest = 0;
  const DataStepTail tail = t.profile ? data_step_tail(job, facts, c, ranks, *t.profile) : DataStepTail{};
  const double comm = tail.comm_s, update = tail.update_s;
  for (size_t i = 0; i < ranks.size(); ++i) {
    RankEstimate r;
    r.rank = ranks[i];
    r.role = role;
    r.samples = shares[i];
    r.memory = data_parallel_memory(job, facts, std::max(shares[i], first[i]), ranks[i] == 0 ? facts.eval_chunk : 0,
                                    state);
    if (t.profile) {
      r.compute_s = replica_seconds(job, facts, *t.profile, double(shares[i])) / speeds[i];
      r.comm_s = comm;
      r.update_s = update;
      slowest = std::max(slowest, r.compute_s);
    }
    out.push_back(r);
  }
  step_s = t.profile ? slowest + comm + update : 0.0;
}

}  // namespace detail

namespace {

void data_ranks(const Job& job, const ModelFacts& facts, const Cluster& c, const Timing& t, Estimate& e) {
  std::vector<int> all(size_t(c.size()));
  std::iota(all.begin(), all.end(), 0);
  const BalanceSection& b = job.parallel.balance;
  e.strategy = fmt::format("data ({}, {} shares)", name_of(job.parallel.comm.algorithm),
                           b.mode == BalanceMode::idat ? "I-DAT" : "equal");
  detail::data_parallel_ranks(job, facts, c, t, all, job.train.global_batch, "data", e.ranks, e.step_s);
  // A checkpoint: each rank writes its piece of the parameters with their optimizer state, brought
  // together in one buffer beside everything training holds (lib/train/checkpoint_shards.h).
  for (RankEstimate& r : e.ranks) r.memory.other += detail::checkpoint_piece_bytes(job, 4.0 * double(facts.parameters),
                                                                                  c.size());
}

// What [train] micro_batch and recompute (the data-parallel and CGP ranks' memory levers) do, when set.
void levers_note(const TrainSection& t, Estimate& e) {
  if (t.micro_batch == 0 && t.recompute == TrainRecompute::none) return;
  const std::string held = t.micro_batch > 0 ? fmt::format("at most {} samples", t.micro_batch) : "its share";
  e.notes.push_back(fmt::format("[train] micro_batch = {}, recompute = \"{}\": a rank holds the activations of {}{}",
                                t.micro_batch, name_of(t.recompute), held,
                                t.recompute == TrainRecompute::all
                                    ? ", the saved ones of one block at a time (and runs its forwards twice)"
                                    : ""));
}

int64_t round_up(double bytes, double unit) { return int64_t(std::ceil(bytes / unit) * unit); }

// The step's split (a data-parallel step: its slowest rank's compute, communication and update; a
// pipeline's is set by pipeline_ranks), and what bounds it.
void split_step(const Job& job, Estimate& e) {
  if (e.step_s <= 0 || e.ranks.empty()) return;
  if (job.parallel.strategy == StrategyKind::data) {
    const RankEstimate* slowest = &e.ranks.front();
    for (const RankEstimate& r : e.ranks)
      if (r.compute_s + r.comm_s + r.update_s > slowest->compute_s + slowest->comm_s + slowest->update_s) slowest = &r;
    e.compute_s = slowest->compute_s;
    e.comm_s = slowest->comm_s;
    e.update_s = slowest->update_s;
    e.bubble_s = std::max(0.0, e.step_s - e.compute_s - e.comm_s - e.update_s);
  }
  if (e.compute_s + e.comm_s + e.bubble_s + e.update_s <= 0) return;
  const std::pair<double, const char*> parts[] = {
      {e.compute_s, "compute"}, {e.comm_s, "communication"}, {e.bubble_s, "bubble"}, {e.update_s, "update"}};
  e.bound = std::max_element(std::begin(parts), std::end(parts))->second;
}

}  // namespace

double sync_tail_seconds(const CommSection& comm, double bytes, const std::function<double(double)>& ring) {
  const double whole = ring(bytes);
  if (comm.algorithm != CommAlgorithm::mra || !comm.overlap) return whole;
  // MRA: buckets reduce-scattered while backward runs; after it, the last bucket's reduce-scatter, and
  // the all-gather of the updated parameters (half a ring allreduce) unless it runs into the next forward.
  return 0.5 * ring(std::min(bytes, comm.bucket_mb * 1e6)) + (comm.overlap_forward ? 0.0 : 0.5 * whole);
}

double replica_compute_seconds(const Job& job, const ModelFacts& facts, const pipeline::BlockProfile& p, double n) {
  return detail::replica_seconds(job, facts, p, n);
}

double model_update_seconds(const ModelFacts& facts, const pipeline::BlockProfile& p) {
  return detail::update_seconds(p, 0, int(facts.blocks.size()) - 1);
}

void detail::strategy_ranks(const Job& job, const ModelFacts& facts, const Cluster& c, const Timing& t, Estimate& e) {
  switch (job.parallel.strategy) {
    case StrategyKind::data: data_ranks(job, facts, c, t, e); break;
    case StrategyKind::cgp: detail::cgp_ranks(job, facts, c, t, e); break;
    case StrategyKind::pipeline: detail::pipeline_ranks(job, facts, c, t, e); break;
    case StrategyKind::cgp_pipeline: detail::cgp_pipeline_ranks(job, facts, c, t, e); break;
    case StrategyKind::automatic:
      throw UsageError(job.source + " [parallel] strategy", "\"auto\" is chosen when the run starts; the estimate is "
                       "of one strategy", "compare them all with dptrain plan JOB --compare, or add --set "
                       "parallel.strategy=data (cgp, pipeline)");
  }
}

Estimate estimate_job(const Job& job, const ModelFacts& facts, const Cluster& c, const Timing& t,
                      const Options& o) {
  Estimate e;
  e.model = facts.describe;
  e.timing_basis = t.profile ? t.basis : "none (memory only)";
  e.flops_per_sample = facts.forward_flops() + facts.backward_flops();
  e.flops_per_step = e.flops_per_sample * double(job.train.global_batch);
  e.steps_per_epoch = (facts.train_samples + job.train.global_batch - 1) / job.train.global_batch;
  e.total_steps = job.train.steps > 0 ? job.train.steps : job.train.epochs * e.steps_per_epoch;
  detail::strategy_ranks(job, facts, detail::cluster_at_start(job, c, e.total_steps), t, e);
  detail::average_over_fluctuation(job, facts, c, t, e);
  if (job.parallel.strategy != StrategyKind::pipeline && job.parallel.strategy != StrategyKind::cgp_pipeline)
    levers_note(job.train, e);
  std::sort(e.ranks.begin(), e.ranks.end(), [](const RankEstimate& a, const RankEstimate& b) { return a.rank < b.rank; });
  for (RankEstimate& r : e.ranks) {
    r.host_bytes += facts.dataset_bytes;
    r.resident_bytes = o.baseline_resident_bytes + r.host_bytes + (o.gpu ? 0.0 : r.memory.total());
    r.memory_limit_bytes = c.rank(r.rank).memory_gb * 1e9;
    r.fits = r.memory_limit_bytes <= 0 || r.memory.total() <= r.memory_limit_bytes;
  }
  const bool grouped = job.parallel.strategy == StrategyKind::cgp || job.parallel.strategy == StrategyKind::cgp_pipeline;
  if (!grouped) split_step(job, e);  // CGP's groups step on their own
  if (e.step_s > 0) {
    e.samples_per_s = double(job.train.global_batch) / e.step_s;
    // Rank 0 evaluates the test set (forward only, about a third of a training step per sample).
    double forward = 0, total = 0;
    for (const pipeline::BlockRow& b : t.profile->blocks) forward += b.forward_ms, total += b.forward_ms + b.backward_ms;
    const double per_sample = detail::blocks_seconds(*t.profile, 0, int(t.profile->blocks.size()) - 1, 1.0) *
                              (total > 0 ? forward / total : 0.0);
    e.eval_s = per_sample * double(facts.test_samples) / c.rank(0).speed;
    const int64_t every = job.train.eval_every > 0 ? job.train.eval_every : e.steps_per_epoch;
    const int64_t evals = (e.total_steps + every - 1) / every;
    e.epoch_s = double(e.steps_per_epoch) * e.step_s + double(e.steps_per_epoch) / double(every) * e.eval_s;
    e.job_s = double(e.total_steps) * e.step_s + double(evals) * e.eval_s;
  }
  // The request: every rank's cores and the largest rank's memory with headroom, GPUs on CUDA ranks.
  ResourceRequest& q = e.request;
  q.ranks = c.size();
  q.nodes = c.nodes();
  q.ranks_per_node = (q.ranks + q.nodes - 1) / q.nodes;
  q.cpus_per_rank = job.train.threads > 0 ? job.train.threads : 1;
  double most = 0;
  for (const RankEstimate& r : e.ranks) most = std::max(most, r.resident_bytes);
  q.memory_per_rank_bytes = round_up(most * (1 + o.memory_headroom), double(1 << 20));
  q.gpus_per_rank = o.gpu ? 1 : 0;
  q.time_limit_s = e.job_s > 0 ? std::ceil(e.job_s * (1 + o.time_headroom) / 60.0) * 60.0 + 300.0 : 0.0;
  if (o.fit_device) e.fit = fewest_devices(job, facts, t, *o.fit_device);
  return e;
}

}  // namespace dp::estimate
