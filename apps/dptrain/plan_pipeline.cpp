// `dptrain plan JOB.toml --profile FILE`: a pipeline for the job's global batch on its cluster (or
// --cluster's, or --workers ranks drawn from its kinds): the planner's stages, devices, micro-batches and
// recomputation with their predicted times and memory, beside the naive plan (equal block counts, ranks
// in order) and data parallelism under the same model, and a user's --stages evaluated the same way.
// Without --profile, for a job of strategy "pipeline": the plan its run would train with
// (lib/train/pipeline_plan.h: its [parallel.pipeline] profile, or its blocks timed now, and its stages
// and recomputation). --json prints the same as one JSON object. Nothing fits: one line saying which
// stage and what would.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <optional>

#include "apps/dptrain/commands.h"
#include "lib/cluster/cluster.h"
#include "lib/core/error.h"
#include "lib/core/json.h"
#include "lib/data/dataset.h"
#include "lib/pipeline/plan.h"
#include "lib/train/pipeline_plan.h"
#include "models/model.h"

namespace dp::app {
namespace {

using pipeline::PlanResult;

std::vector<int64_t> micro_batch_counts(const PlanCommand& cmd, const Job& job) {
  const int64_t batch = job.train.global_batch;
  if (cmd.micro_batches > 0 && batch % cmd.micro_batches != 0)
    throw UsageError("--micro-batches", fmt::format("{} micro-batches do not divide the global batch of {}",
                                                    cmd.micro_batches, batch),
                     "give a divisor of train.global_batch");
  return micro_batch_candidates(batch, cmd.micro_batches > 0 ? cmd.micro_batches : job.parallel.pipeline.micro_batches);
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!s.empty()) s += ',';
    s += j == i ? std::to_string(ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]);
    i = j + 1;
  }
  return s.size() <= 24 ? s : fmt::format("{} ranks", ranks.size());
}

std::string blocks_text(const std::vector<int>& blocks) { return blocks.empty() ? "-" : ranks_text(blocks); }

void print_stages(const std::string& title, const PlanResult& r) {
  const auto& pr = r.prediction;
  std::printf("%s\n  %5s %-10s %-24s %8s %8s %8s %8s %8s %9s %5s %13s  %s\n", title.c_str(), "stage", "blocks",
              "ranks", "fwd ms", "bwd ms", "link ms", "ar ms", "upd ms", "busy", "fly", "peak/mem GB", "recomputed");
  for (size_t s = 0; s < r.plan.stages.size(); ++s) {
    const auto& st = r.plan.stages[s];
    const auto& sp = pr.stages[s];
    double peak = 0, memory = 0;
    for (size_t i = 0; i < sp.peak_bytes.size(); ++i)
      if (sp.peak_bytes[i] > peak) peak = sp.peak_bytes[i], memory = sp.memory_bytes[i];
    std::printf("  %5zu %-10s %-24s %8.3f %8.3f %8.3f %8.3f %8.3f %8.1f%% %5lld %13s  %s\n", s,
                fmt::format("{}-{}", st.first, st.last).c_str(), ranks_text(st.ranks).c_str(), sp.forward_s * 1e3,
                sp.backward_s * 1e3, sp.link_s * 1e3, sp.allreduce_s * 1e3, sp.update_s * 1e3, sp.busy_fraction * 100,
                (long long)sp.in_flight,
                (memory > 0 ? fmt::format("{:.3g}/{:.3g}{}", peak / 1e9, memory / 1e9, sp.fits ? "" : "!")
                            : fmt::format("{:.3g}/-", peak / 1e9)).c_str(),
                blocks_text(st.recompute).c_str());
  }
}

void print_summary_row(const char* name, const PlanResult& r) {
  int devices = 0;
  for (const auto& s : r.plan.stages) devices += int(s.ranks.size());
  const auto& p = r.prediction;
  std::printf("  %-14s %6zu %7d %5lld %12.3f %12.1f %8.1f%% %12.3f  %s\n", name, r.plan.stages.size(), devices,
              (long long)r.plan.micro_batches, p.minibatch_s * 1e3, p.samples_per_s, p.bubble_fraction * 100,
              p.bottleneck_s * 1e3, r.feasible ? "fits" : "does not fit");
}

std::string doubles(const std::vector<double>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += fmt::format("{}{:.9g}", i ? "," : "", v[i]);
  return s + "]";
}

std::string result_json(const PlanResult& r) {
  std::string stages;
  for (size_t s = 0; s < r.plan.stages.size(); ++s) {
    const auto& st = r.plan.stages[s];
    const auto& sp = r.prediction.stages[s];
    std::vector<int> shares(sp.shares.begin(), sp.shares.end());
    stages += fmt::format(
        "{}{{\"first\":{},\"last\":{},\"ranks\":{},\"shares\":{},\"forward_s\":{:.9g},\"backward_s\":{:.9g},"
        "\"recompute_s\":{:.9g},\"link_s\":{:.9g},\"allreduce_s\":{:.9g},\"update_s\":{:.9g},\"in_flight\":{},"
        "\"busy_fraction\":{:.9g},"
        "\"peak_bytes\":{},\"memory_bytes\":{},\"fits\":{},\"recompute\":{}}}",
        s ? "," : "", st.first, st.last, json_ints(st.ranks), json_ints(shares), sp.forward_s, sp.backward_s,
        sp.recompute_s, sp.link_s, sp.allreduce_s, sp.update_s, sp.in_flight, sp.busy_fraction, doubles(sp.peak_bytes),
        doubles(sp.memory_bytes), sp.fits, json_ints(st.recompute));
  }
  const auto& p = r.prediction;
  return fmt::format("{{\"method\":{},\"feasible\":{},\"micro_batches\":{},\"minibatch_s\":{:.9g},"
                     "\"samples_per_s\":{:.9g},\"bubble_fraction\":{:.9g},\"bottleneck_s\":{:.9g},"
                     "\"allreduce_tail_s\":{:.9g},\"stages\":[{}]}}",
                     json_quoted(r.method), r.feasible, r.plan.micro_batches, p.minibatch_s, p.samples_per_s,
                     p.bubble_fraction, p.bottleneck_s, p.allreduce_tail_s, stages);
}

}  // namespace

int plan_pipeline(const PlanCommand& cmd, const Job& job) {
  const int64_t batch = job.train.global_batch;
  const bool from_job = cmd.profile.empty();  // the run's own plan
  const std::string profile_path = from_job ? job.parallel.pipeline.profile : cmd.profile;
  const bool ours = from_job || pipeline::is_block_profile(cmd.profile);
  if (ours && cmd.profile_batch > 0)
    throw UsageError("--profile-batch", "is for PipeDream's profiles; a dptrain profile says its micro_batch",
                     "leave out --profile-batch");
  pipeline::LayerProfile profile;  // PipeDream's, when it is one
  pipeline::BlockProfile block_profile;
  if (from_job) {
    const DatasetSplits data = load_dataset(job.data, job.job.seed);
    const auto model = make_model(job.model, data.train.shape(), job.job.seed);
    check_pipeline_job(job, *model);
    block_profile = job_layer_profile(job, *model);
  } else if (ours) {
    block_profile = pipeline::read_block_profile(cmd.profile);
  } else {
    profile = pipeline::read_pipedream_graph(cmd.profile);
  }
  const double profile_batch =
      ours ? double(block_profile.micro_batch) : cmd.profile_batch > 0 ? cmd.profile_batch : double(batch);
  pipeline::Workload w = from_job ? job_pipeline_workload(job, block_profile)
                         : ours   ? pipeline::workload_from_block_profile(block_profile)
                                  : pipeline::workload_from_profile(profile, profile_batch);
  w.global_batch = batch;
  w.micro_batch_counts = micro_batch_counts(cmd, job);
  w.state_per_param_byte = resident_bytes_per_param_byte(job.optim);
  w.sharded_per_param_byte = sharded_bytes_per_param_byte(job);
  const uint64_t seed = cmd.seed_given ? cmd.seed : job.job.seed;
  const Cluster c = cmd.workers > 0 ? draw_cluster(job, int(cmd.workers), seed)
                    : from_job    ? profiled_cluster(job)
                                  : pipeline_cluster(job);

  // Blocks sharing weights (a tied LM head and the embedding) would need their gradients summed across
  // stages, which the runtime does not do: such a model is planned as one stage, data parallel.
  for (size_t b = 0; b < block_profile.blocks.size(); ++b)
    if (const int other = block_profile.blocks[b].shares_weights_with; other >= 0 && other != int(b))
      throw InputError(profile_path.empty() ? job.source + " [model] tied_head" : profile_path,
                       fmt::format("block {} ({}) shares its weights with block {}: they cannot be in "
                                   "different pipeline stages", b, block_profile.blocks[b].name, other),
                       "untie them ([model] tied_head = false) and profile again, or train data parallel");
  pipeline::PlanOptions o;
  o.seed = seed;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> warnings;
  std::string how;
  PlanResult planned;
  if (from_job) {
    Job planned_job = job;
    planned_job.job.seed = seed;
    PipelineChoice choice = choose_pipeline_plan(planned_job, w, c);
    planned = std::move(choice.result);
    warnings = std::move(choice.warnings);
    how = "the run's, " + choice.how;
  } else {
    planned = pipeline::plan_pipeline(w, c, o);
    how = fmt::format("the planner's ({})", planned.method);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!planned.feasible && !from_job)
    throw InputError(job.source + " [cluster]", "nothing fits: " + pipeline::explain_infeasible(w, c, planned),
                     "see man dptrain(1), PIPELINE MODEL, for what a stage holds");
  std::optional<PlanResult> given;
  if (!cmd.stages.empty())
    given = pipeline::best_given_stages(cmd.stages, w, c, "--stages",
                                        [&](pipeline::Plan p) { return pipeline::finish_plan(w, c, std::move(p)); });
  const PlanResult naive = pipeline::naive_plan(w, c), data = pipeline::data_parallel_plan(w, c);

  const std::string profile_source =
      !profile_path.empty() ? profile_path : fmt::format("the blocks timed now at {} samples", block_profile.micro_batch);
  if (cmd.json) {
    std::printf("{\"job\":%s,\"profile\":%s,\"blocks\":%zu,\"chain\":%s,\"profile_batch\":%.9g,\"global_batch\":%lld,"
                "\"ranks\":%d,\"cluster\":%s,\"planning_s\":%.6g,\"plan\":%s,\"naive\":%s,\"data_parallel\":%s,"
                "\"given\":%s}\n",
                json_quoted(job.job.name).c_str(), json_quoted(profile_source).c_str(), w.blocks.size(),
                profile.chain ? "true" : "false", profile_batch, (long long)batch, c.size(),
                json_quoted(c.describe()).c_str(), seconds, result_json(planned).c_str(), result_json(naive).c_str(),
                result_json(data).c_str(), given ? result_json(*given).c_str() : "null");
    return 0;
  }
  std::printf("job %s: pipeline of %zu blocks from %s (%s), times for minibatches of %g samples; global batch %lld\n",
              job.job.name.c_str(), w.blocks.size(), profile_source.c_str(),
              profile.chain ? "a chain" : "a graph, linearised", profile_batch, (long long)batch);
  std::printf("cluster: %s\n", c.describe().c_str());
  std::printf("1F1B with a flush per mini-batch; plan: %s, %.3f s\n", how.c_str(), seconds);
  for (const std::string& line : warnings) std::printf("warning: %s\n", line.c_str());
  std::printf("\n  %-14s %6s %7s %5s %12s %12s %9s %12s\n", "", "stages", "devices", "M", "T ms", "samples/s", "bubble",
              "bottleneck ms");
  print_summary_row(from_job ? "run's plan" : "planner", planned);
  if (given) print_summary_row("--stages", *given);
  print_summary_row("naive", naive);
  print_summary_row("data parallel", data);
  auto versus = [&](const char* name, const PlanResult& b) {
    return b.feasible ? fmt::format("{:.2f}x {}", planned.prediction.samples_per_s / b.prediction.samples_per_s, name)
                      : fmt::format("{} does not fit", name);
  };
  std::printf("verdict: %s samples/s are %s, %s%s\n\n", from_job ? "the run's plan's" : "the planner's", versus("the naive plan's", naive).c_str(),
              versus("data parallelism's", data).c_str(),
              given ? (", " + versus("the given stages'", *given)).c_str() : "");
  print_stages(fmt::format("{} stages (M = {} micro-batches of {} samples):", from_job ? "the run's" : "planner's",
                           planned.plan.micro_batches,
                           batch / planned.plan.micro_batches),
               planned);
  if (given) {
    std::printf("\n");
    print_stages(fmt::format("--stages (M = {}):", given->plan.micro_batches), *given);
  }
  return 0;
}

}  // namespace dp::app
