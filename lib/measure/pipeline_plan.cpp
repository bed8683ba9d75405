// Choosing a pipeline run's plan (pipeline_plan.h): workload from a layer profile, cluster with the
// emulated speeds, the planner or the job's stages, recomputation as asked.
#include "lib/measure/pipeline_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>

#include "lib/core/error.h"
#include "lib/measure/layer_profile.h"
#include "lib/pipeline/plan_report.h"

namespace dp {
namespace {

std::string key_where(const Job& job, const char* key) { return fmt::format("{} [parallel.pipeline] {}", job.source, key); }

// The job's stages at each candidate M (those whose micro-batches are too small for a stage's replicas
// are skipped), the fastest that fits, else the fastest.
pipeline::PlanResult given_stages(const Job& job, const pipeline::Workload& w, const Cluster& c) {
  auto finish = [&](pipeline::Plan p) { return with_job_recompute(job, w, c, std::move(p), "given"); };
  try {
    return pipeline::best_given_stages(job.parallel.pipeline.stages, w, c, key_where(job, "stages"), finish);
  } catch (const UsageError& e) {
    throw JobError(e.where(), e.message(), e.hint());
  }
}

}  // namespace

pipeline::PlanResult with_job_recompute(const Job& job, const pipeline::Workload& w, const Cluster& c,
                                        pipeline::Plan plan, const std::string& method) {
  const Recompute mode = job.parallel.pipeline.recompute;
  if (mode == Recompute::automatic) {
    pipeline::PlanResult r = pipeline::finish_plan(w, c, std::move(plan));
    r.method = method;
    return r;
  }
  for (pipeline::Stage& s : plan.stages) {
    s.recompute.clear();
    if (mode == Recompute::all)
      for (int b = s.first; b <= s.last; ++b) s.recompute.push_back(b);
  }
  pipeline::PlanResult r;
  r.prediction = pipeline::evaluate(w, c, plan);
  r.plan = std::move(plan);
  r.method = method;
  r.feasible = r.prediction.fits;
  return r;
}

std::vector<int64_t> micro_batch_candidates(int64_t global_batch, int64_t fixed) {
  if (fixed > 0) return {fixed};
  std::vector<int64_t> out;
  for (int64_t m = 1; m <= std::min<int64_t>(64, global_batch); ++m)
    if (global_batch % m == 0) out.push_back(m);
  return out;
}

double resident_bytes_per_param_byte(const OptimSection& o) { return o.name == OptimizerKind::adamw ? 4 : 3; }

double sharded_bytes_per_param_byte(const Job& job) {
  const CommSection& c = job.parallel.comm;
  return c.algorithm == CommAlgorithm::mra && c.sharded_update ? resident_bytes_per_param_byte(job.optim) - 2 : 0;
}

Cluster pipeline_cluster(const Job& job) {
  Cluster c = cluster_from_job(job);
  // Emulated device memory is what the ranks have: the plan must fit it.
  if (const auto& gb = job.cluster.emulate.memory_gb; !gb.empty())
    c = c.with_memory(gb.size() == 1 ? std::vector<double>(size_t(c.size()), gb.front()) : gb);
  const auto& slow = job.cluster.emulate.slowdown;
  if (slow.empty()) return c;
  std::vector<double> speeds = c.speeds();
  for (size_t r = 0; r < speeds.size() && r < slow.size(); ++r) speeds[r] /= slow[r];
  return c.with_speeds(speeds);
}

Job pipeline_group_job(const Job& job, int group_size) {
  Job j = job;
  j.train.global_batch = std::max<int64_t>(
      1, std::llround(double(job.train.global_batch) * group_size / double(std::max<int64_t>(1, job.launch.ranks))));
  j.launch.ranks = group_size;
  return j;
}

int64_t profile_micro_batch(const Job& job) {
  const int64_t batch = job.train.global_batch;
  return std::min(batch, std::max<int64_t>(8, batch / std::max<int64_t>(1, 4 * job.launch.ranks)));
}

pipeline::BlockProfile job_layer_profile(const Job& job, const ModelShape& model) {
  const std::string& path = job.parallel.pipeline.profile;
  if (path.empty()) return measure_block_profile(job, profile_micro_batch(job), 5, 2);
  pipeline::BlockProfile p = pipeline::read_block_profile(path);
  if (int(p.blocks.size()) != int(model.blocks.size()))
    throw ProfileError(path, fmt::format("the profile has {} blocks, the job's model ({}) has {}", p.blocks.size(),
                                         model.describe, int(model.blocks.size())),
                       "profile the job's model: dptrain profile --layers JOB --out FILE");
  for (int b = 0; b < int(model.blocks.size()); ++b)
    if (p.blocks[size_t(b)].name != model.blocks[size_t(b)].name)
      throw ProfileError(path, fmt::format("block {} is '{}' in the profile, '{}' in the job's model", b,
                                           p.blocks[size_t(b)].name, model.blocks[size_t(b)].name),
                         "profile the job's model: dptrain profile --layers JOB --out FILE");
  return p;
}

Cluster profiled_cluster(const Job& job) {
  const std::vector<double> described = cluster_from_job(job).speeds();
  const double profiled = job.cluster.emulate.as_described ? *std::max_element(described.begin(), described.end())
                                                           : described.front();
  const Cluster c = pipeline_cluster(job);
  std::vector<double> speeds = c.speeds();
  for (double& s : speeds) s /= profiled;
  return c.with_speeds(speeds);
}

namespace {
// Seconds of forward and backward of the whole model on `samples` samples under the workload's times.
double model_seconds(const pipeline::Workload& w, double samples) {
  double t = 0;
  for (const pipeline::BlockCost& b : w.blocks)
    t += samples * (b.forward_s + b.backward_s) + b.forward_fixed_s + b.backward_fixed_s;
  return t;
}
}  // namespace

std::string smallest_pipeline_hint(const pipeline::Workload& w, const Cluster& c, uint64_t seed) {
  int roomiest = 0;
  for (int r = 1; r < c.size(); ++r)
    if (c.rank(r).memory_gb > c.rank(roomiest).memory_gb) roomiest = r;
  ClusterRank device = c.rank(roomiest);
  device.node = device.rack = 0;
  const Link link = c.size() > 1 ? c.link(0, 1) : Link{100, 0};
  pipeline::PlanOptions o;
  o.seed = seed;
  const int most = int(std::min<int64_t>(4096, w.global_batch));
  const pipeline::SmallestPipeline s = pipeline::smallest_pipeline(
      w, [&](int n) { return Cluster(std::vector<ClusterRank>(size_t(n), device), link, link, link); }, most, o);
  const bool timed = std::any_of(w.blocks.begin(), w.blocks.end(), [](const pipeline::BlockCost& b) {
    return b.forward_s > 0 || b.forward_fixed_s > 0;
  });
  if (s.devices == 0)
    return fmt::format("no pipeline fits on up to {} devices of {:.3g} GB (rank {}'s): add memory", most,
                       device.memory_gb, roomiest);
  return fmt::format("the smallest pipeline that fits takes {} device{} like rank {} ({:.3g} GB): {}; set "
                     "launch.ranks = {}, or add memory",
                     s.devices, s.devices == 1 ? "" : "s", roomiest, device.memory_gb,
                     pipeline::plan_line(s.result, timed), s.devices);
}

Cluster measured_cluster(const Job& job, const pipeline::Workload& w, const std::vector<double>& step_ms,
                         const std::vector<int64_t>& local_batch) {
  const Cluster c = pipeline_cluster(job);
  std::vector<double> speeds(size_t(c.size()));
  for (size_t r = 0; r < speeds.size(); ++r)
    speeds[r] = model_seconds(w, double(local_batch[r])) * 1e3 / step_ms[r];
  return c.with_speeds(speeds);
}

pipeline::Workload job_pipeline_workload(const Job& job, const pipeline::BlockProfile& p) {
  pipeline::Workload w = pipeline::workload_from_block_profile(p);
  w.global_batch = job.train.global_batch;
  w.micro_batch_counts = micro_batch_candidates(w.global_batch, job.parallel.pipeline.micro_batches);
  w.state_per_param_byte = resident_bytes_per_param_byte(job.optim);
  w.sharded_per_param_byte = sharded_bytes_per_param_byte(job);
  w.checkpoint_per_param_byte = job.checkpoint.enabled ? resident_bytes_per_param_byte(job.optim) - 2 : 0.0;
  // recompute = "none": plan for stages that fit without it (the planner would otherwise choose stages
  // that fit only recomputing, then be stripped of it).
  w.may_recompute = job.parallel.pipeline.recompute != Recompute::none;
  return w;
}

PipelineChoice choose_pipeline_plan(const Job& job, const pipeline::Workload& w, const Cluster& c) {
  PipelineChoice out;
  out.workload = w;
  if (!job.parallel.pipeline.stages.empty()) {
    out.result = given_stages(job, w, c);
    out.how = "[parallel.pipeline] stages";
  } else {
    pipeline::PlanOptions o;
    o.seed = job.job.seed;
    const pipeline::PlanResult planned = pipeline::plan_pipeline(w, c, o);
    if (!planned.feasible && job.parallel.pipeline.recompute == Recompute::automatic)
      throw JobError(job.source + (job.cluster.emulate.memory_gb.empty() ? " [cluster] memory_gb"
                                                                        : " [cluster.emulate] memory_gb"),
                     "nothing fits: " + pipeline::explain_infeasible(w, c, planned),
                     smallest_pipeline_hint(w, c, job.job.seed));
    out.result = with_job_recompute(job, w, c, planned.plan, planned.method);
    out.how = fmt::format("the planner's ({})", planned.method);
  }
  const pipeline::PlanResult& r = out.result;
  if (!r.feasible && job.parallel.pipeline.recompute == Recompute::automatic)
    throw JobError(key_where(job, "stages"),
                   "the stages do not fit memory even recomputing: " + pipeline::explain_infeasible(w, c, r),
                   "use more stages or replicas, or leave stages empty for the planner's");
  for (size_t s = 0; s < r.plan.stages.size(); ++s) {
    const pipeline::StagePrediction& sp = r.prediction.stages[s];
    for (size_t i = 0; i < sp.peak_bytes.size(); ++i)
      if (sp.memory_bytes[i] > 0 && sp.peak_bytes[i] > sp.memory_bytes[i])
        out.warnings.push_back(fmt::format(
            "stage {} on rank {} is predicted to hold {:.3g} MB, over its [cluster] memory of {:.3g} MB "
            "(recompute = \"{}\")", s, r.plan.stages[s].ranks[i], sp.peak_bytes[i] / 1e6, sp.memory_bytes[i] / 1e6,
            name_of(job.parallel.pipeline.recompute)));
  }
  return out;
}

void check_pipeline_job(const Job& job, const ModelShape& model) {
  const PipelineSection& p = job.parallel.pipeline;
  if (job.train.device == DeviceRequest::cuda)
    throw JobError("parallel.strategy", "strategy \"pipeline\" runs on CPU ranks only",
                   "set [train] device = \"cpu\", or strategy = \"data\" on GPUs");
  if (!p.profile.empty()) {
    if (!std::filesystem::exists(p.profile))
      throw JobError(key_where(job, "profile"), fmt::format("no such file: {}", p.profile),
                     "write one with: dptrain profile --layers JOB --out FILE, or leave profile empty");
    if (!pipeline::is_block_profile(p.profile))
      throw JobError(key_where(job, "profile"),
                     fmt::format("{} is not a dptrain layer profile (PipeDream's graph.txt describes PipeDream's "
                                 "models, not this job's)", p.profile),
                     "write one with: dptrain profile --layers JOB --out FILE");
    (void)job_layer_profile(job, model);  // readable, and of this model
  }
  // The stages against the model's blocks and the cluster, with the block count alone (no timing).
  if (!p.stages.empty()) {
    pipeline::Workload w;
    w.blocks.resize(model.blocks.size());
    w.global_batch = job.train.global_batch;
    const Cluster c = cluster_from_job(job);
    const std::vector<int64_t> counts = micro_batch_candidates(w.global_batch, p.micro_batches);
    std::optional<JobError> refused;
    bool any = false;
    for (int64_t M : counts) {
      try {
        const pipeline::Plan plan = pipeline::parse_stages(p.stages, w, c, M, key_where(job, "stages"));
        any = true;
        for (const pipeline::Stage& s : plan.stages)
          for (int b = s.first; b <= s.last; ++b) {
            const BlockShape& shape = model.blocks[size_t(b)];
            if (shape.shared_count > 0 && (shape.shared_offset < model.blocks[size_t(s.first)].param_offset ||
                                           shape.shared_offset >= model.blocks[size_t(s.last)].param_offset +
                                                                      model.blocks[size_t(s.last)].param_count))
              throw JobError(key_where(job, "stages"),
                             fmt::format("block {} ({}) shares its weights with a block of another stage (a tied LM "
                                         "head and the token embedding)", b, shape.name),
                             "set [model] tied_head = false to split them, or keep them in one stage");
          }
        break;
      } catch (const UsageError& e) {
        if (!refused) refused = JobError(e.where(), e.message(), e.hint());
      }
    }
    if (!any) throw *refused;
  } else {
    // The planner may cut anywhere: a tied head cannot be split from the embedding.
    for (int b = 0; b < int(model.blocks.size()); ++b)
      if (model.blocks[size_t(b)].shared_count > 0 && int(model.blocks.size()) > 1 && job.launch.ranks > 1)
        throw JobError("[model] tied_head",
                       fmt::format("block {} ({}) shares its weights with the token embedding, and the planner may "
                                   "put them in different stages", b, model.blocks[size_t(b)].name),
                       "set [model] tied_head = false, or give [parallel.pipeline] stages that keep them together");
  }
  // With memory limits a plan may not fit: choose it now (timing the blocks when the job gives no
  // profile), so that the run is refused before any rank starts.
  const Cluster c = profiled_cluster(job);
  const bool limited = std::any_of(c.ranks().begin(), c.ranks().end(), [](const ClusterRank& r) { return r.memory_gb > 0; });
  if (limited) (void)choose_pipeline_plan(job, job_pipeline_workload(job, job_layer_profile(job, model)), c);
}

pipeline::BlockProfile job_layer_profile(const Job& job, const Model& model) { return job_layer_profile(job, model.shape()); }

void check_pipeline_job(const Job& job, const Model& model) { check_pipeline_job(job, model.shape()); }

}  // namespace dp
