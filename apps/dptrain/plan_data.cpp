// `dptrain plan JOB.toml` for [parallel] strategy = "data": the division of the global batch among the
// ranks (I-DAT's first division from the job's speeds, and the one emulated slowdowns call for), the
// gradient buckets of MRA over the job's model, each rank's buffers against its device's memory (a job
// that does not fit is refused with the smallest pipeline that does), and the step estimate's model
// predicts (plan_prediction.h); as text or, --json, one object. No MPI; the model is built only to time
// its blocks when no --profile or --device gives times.
#include <fmt/format.h>

#include <cstdio>

#include "apps/dptrain/plan.h"
#include "apps/dptrain/plan_prediction.h"
#include "lib/balance/balance.h"
#include "lib/balance/job_balance.h"
#include "lib/core/error.h"
#include "lib/core/json.h"
#include "lib/data/dataset.h"
#include "lib/estimate/estimate.h"
#include "lib/measure/pipeline_plan.h"
#include "lib/mra/mra.h"
#include "models/model_shape.h"

namespace dp::app {
namespace {

void print_division(const char* title, const std::vector<int64_t>& shares, const std::vector<double>& speeds) {
  const double step = predicted_step_seconds(shares, speeds);
  std::printf("%s\n  %4s %10s %8s %14s\n", title, "rank", "speed", "share", "compute time");
  for (size_t r = 0; r < shares.size(); ++r)
    std::printf("  %4zu %10.3f %8lld %13.3fx\n", r, speeds[r], (long long)shares[r],
                double(shares[r]) / speeds[r] / step);
  std::printf("  predicted step compute: %.4g (samples / unit speed, slowest rank)\n", step);
}

// MRA's buckets over the job's model's shape (the data decides the model's input and output sizes; the
// model is not built): the ranges the hooks announce as training slices them. None for plain allreduce.
std::vector<ParamRange> job_buckets(const Job& job, const ModelShape& model) {
  const auto& c = job.parallel.comm;
  if (c.algorithm != CommAlgorithm::mra) return {};
  return plan_buckets(model.hook_ranges(hook_slice_floats(grad_sync_options(c))), model.parameters,
                      int64_t(c.bucket_mb * 1e6), int64_t(c.first_bucket_mb * 1e6));
}

void print_buckets(const Job& job, const ModelShape& model, const std::vector<ParamRange>& buckets) {
  const auto& c = job.parallel.comm;
  std::printf("model: %s\ngradients: %s", model.describe.c_str(), name_of(c.algorithm).c_str());
  if (c.algorithm != CommAlgorithm::mra) {
    std::printf(" (one allreduce per layer after backward, full update on every rank)\n");
    return;
  }
  std::printf(" (%zu bucket(s) in backward order, overlap %s, sharded update %s)\n", buckets.size(),
              !c.overlap ? "off" : buckets.size() > 1 ? "on" : "off: one bucket, nothing to overlap",
              c.sharded_update ? "on" : "off");
  for (size_t b = 0; b < buckets.size(); ++b)
    std::printf("  bucket %zu: parameters [%lld, %lld), %.2f MB\n", b, (long long)buckets[b].offset,
                (long long)buckets[b].end(), double(buckets[b].count) * 4e-6);
}

std::string size_text(double bytes) {
  return bytes >= 1e10 ? fmt::format("{:.1f} GB", bytes * 1e-9) : fmt::format("{:.1f} MB", bytes * 1e-6);
}

std::string terms(const estimate::MemoryTerms& m) {
  return fmt::format("parameters {}, gradients {}, optimizer {}, activations {}, workspace and other {}",
                     size_text(m.params), size_text(m.grads), size_text(m.optimizer), size_text(m.activations),
                     size_text(m.workspace + m.other));
}

// Each rank's buffers (estimate's terms, from the model's shapes) against its device's memory, before
// anything is printed: a rank that does not fit refuses the job, its hint the smallest pipeline that fits.
std::vector<estimate::RankEstimate> check_memory(const Job& job, const estimate::ModelFacts& facts) {
  const Cluster cluster = pipeline_cluster(job);
  const estimate::Estimate e = estimate::estimate_job(job, facts, cluster, estimate::Timing{}, estimate::Options{});
  for (const estimate::RankEstimate& r : e.ranks) {
    if (r.fits) continue;
    Job as_pipeline = job;
    as_pipeline.parallel.strategy = StrategyKind::pipeline;
    const pipeline::Workload w =
        job_pipeline_workload(as_pipeline, estimate::shape_profile(facts, profile_micro_batch(as_pipeline)));
    throw InputError(job.source + (job.cluster.emulate.memory_gb.empty() ? " [cluster]" : " [cluster.emulate]"),
                     fmt::format("rank {} does not fit: data parallelism needs {} of buffers on it ({}), its "
                                 "memory is {}", r.rank, size_text(r.memory.total()), terms(r.memory),
                                 size_text(r.memory_limit_bytes)),
                     "as strategy \"pipeline\", " + smallest_pipeline_hint(w, cluster, job.job.seed) +
                         "; or lower the activations: [train] micro_batch, recompute");
  }
  return e.ranks;
}

void print_memory(const std::vector<estimate::RankEstimate>& ranks) {
  std::printf("memory per rank (buffers from the model's shapes; its device's memory, - where [cluster] gives none):\n"
              "  %4s %10s %14s %10s\n", "rank", "needs MB", "activations MB", "has MB");
  for (const estimate::RankEstimate& r : ranks) {
    const std::string has = r.memory_limit_bytes > 0 ? fmt::format("{:.1f}", r.memory_limit_bytes * 1e-6) : "-";
    std::printf("  %4d %10.1f %14.1f %10s\n", r.rank, r.memory.total() * 1e-6, r.memory.activations * 1e-6,
                has.c_str());
  }
}

}  // namespace

int plan_data(const PlanCommand& cmd, const Job& job) {
  const estimate::ModelFacts facts = estimate::model_facts(job);
  const std::vector<estimate::RankEstimate> memory = check_memory(job, facts);
  const int ranks = int(job.launch.ranks);
  const int64_t batch = job.train.global_batch;
  const DatasetSplits data = load_dataset(job.data, job.job.seed);
  const ModelShape model = model_shape(job.model, data.train.shape());
  const std::vector<ParamRange> buckets = job_buckets(job, model);
  const OneModel predicted = one_model(job, facts, plan_timing(cmd, job, facts));

  const std::vector<double> equal_speeds(size_t(ranks), 1.0);
  const BalanceOptions o = balance_options(job, ranks);
  const bool known = job.parallel.balance.mode == BalanceMode::idat && !o.initial_speeds.empty();
  const std::vector<int64_t> first = Balancer(o, ranks).shares(batch);
  const std::vector<double>& first_speeds = known ? o.initial_speeds : equal_speeds;
  if (cmd.json) {
    std::string bucket_list, rank_list;
    for (const ParamRange& b : buckets)
      bucket_list += fmt::format("{}[{}, {}]", bucket_list.empty() ? "" : ", ", b.offset, b.end());
    for (size_t r = 0; r < memory.size(); ++r)
      rank_list += fmt::format("{}{{\"rank\": {}, \"share\": {}, \"speed\": {:.6g}, \"bytes\": {:.0f}, "
                               "\"activation_bytes\": {:.0f}, \"memory_bytes\": {:.0f}}}", r ? ", " : "",
                               memory[r].rank, first[r], first_speeds[r], memory[r].memory.total(),
                               memory[r].memory.activations, memory[r].memory_limit_bytes);
    std::printf("{\"job\": %s, \"model\": %s, \"ranks\": %d, \"global_batch\": %lld, \"division\": %s, "
                "\"gradients\": %s, \"buckets\": [%s], \"per_rank\": [%s], \"predicted\": %s}\n",
                json_quoted(job.job.name).c_str(), json_quoted(model.describe).c_str(), ranks, (long long)batch,
                json_quoted(name_of(job.parallel.balance.mode)).c_str(),
                json_quoted(name_of(job.parallel.comm.algorithm)).c_str(), bucket_list.c_str(), rank_list.c_str(),
                one_model_json(predicted).c_str());
    return 0;
  }
  std::printf("job %s: %d rank(s), global batch %lld, division %s\n", job.job.name.c_str(), ranks,
              (long long)batch, name_of(job.parallel.balance.mode).c_str());
  print_division(!known ? "first division (equal; I-DAT, when on, measures the speeds from the first step;\n"
                          "  `dptrain profile --compute` measures them beforehand):"
                 : job.parallel.balance.speeds.empty() ? "first division (from the speeds [cluster] describes):"
                                                       : "first division (from [parallel.balance] speeds):",
                 first, first_speeds);
  const auto& slow = job.cluster.emulate.slowdown;
  if (!slow.empty()) {
    std::vector<double> emulated;
    for (double f : slow) emulated.push_back(1.0 / f);
    print_division("with [cluster.emulate] slowdown, equal shares would give:", divide_batch(batch, equal_speeds),
                   emulated);
    if (job.parallel.balance.mode == BalanceMode::idat)
      print_division("and I-DAT would converge to:", divide_batch(batch, emulated, 1, o.max_share), emulated);
  }
  print_buckets(job, model, buckets);
  print_memory(memory);
  std::fputs(one_model_text(predicted).c_str(), stdout);
  return 0;
}

}  // namespace dp::app
