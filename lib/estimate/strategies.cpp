// The estimate's CGP and pipeline ranks (estimate_internal.h). A CGP rank trains its group's share like a
// data-parallel rank of that group, and keeps the whole model besides (the global model's exchanges) and
// times it before training on a second copy (the speed probe): MemoryTerms::other. A pipeline rank holds
// its stage as the planner's memory model says (lib/pipeline: what a stage's buffers hold, tested), the
// model's fixed buffers, and before training times the blocks one at a time (lib/measure/layer_profile):
// its peak is the larger of the two.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "lib/cgp/cgp.h"
#include "lib/estimate/estimate_internal.h"
#include "lib/measure/pipeline_plan.h"
#include "lib/pipeline/plan_internal.h"
#include "lib/pipeline/schedule.h"

namespace dp::estimate {

// CGP's model is linear in samples (estimate.h).
double cgp_sample_seconds(const Job& job, const ModelFacts& facts, const Cluster& c, const Timing& t) {
  if (job.cluster.sample_rate > 0) return 1.0 / job.cluster.sample_rate;
  if (!t.profile) return 1e-3;  // memory only: any positive time gives the grouping's shape
  const double share = std::max(1.0, double(job.train.global_batch) / double(c.size()));
  return (detail::blocks_seconds(*t.profile, 0, int(facts.blocks.size()) - 1, share) +
          detail::step_extra_seconds(*t.profile, share, 1.0)) / share;
}

}  // namespace dp::estimate

namespace dp::estimate::detail {

double checkpoint_piece_bytes(const Job& job, double param_bytes, int replicas) {
  if (replicas <= 1 || !job.checkpoint.enabled) return 0;  // a lone replica writes what it keeps, in place
  const int slots = job.optim.name == OptimizerKind::adamw ? 2 : 1;
  return double(slots) * 4.0 * std::ceil(param_bytes / 4.0 / double(replicas));
}

namespace {

// Bytes of the whole model's parameters, gradients and fixed buffers.
double whole_model_bytes(const ModelFacts& f) { return 8.0 * double(f.parameters) + f.fixed_bytes; }

// A second model timed on `samples` (forward and backward, no optimizer), alive before training.
double probe_bytes(const Job& job, const ModelFacts& f, int64_t samples) {
  return data_parallel_memory(job, f, samples, 0, 0).total();
}

// The blocks timed one at a time on n samples (layer_profile.cpp's time_blocks): the data's buffers, two
// activation buffers passed from block to block, the saved activations, the input gradient and the
// blocks' working memory, each grown to the largest block's so far, beside one block's parameters,
// gradients (with the weights it shares) and, while its update is timed, its optimizer state.
double block_probe_bytes(const Job& job, const ModelFacts& f, int64_t n) {
  const double N = double(n);
  const int slots = job.optim.name == OptimizerKind::adamw ? 2 : 1;
  double a = N * double(f.input_floats), b = 0, saved = 0, dx = 0, scratch = 0, peak = 0;
  const double ids = 4.0 * N * double(f.input_tokens + f.targets_per_sample);
  for (size_t i = 0; i < f.blocks.size(); ++i) {
    const BlockShape& s = f.blocks[i];
    b = std::max(b, N * double(s.out_floats));
    saved = std::max(saved, N * double(s.saved_floats));
    if (i > 0) dx = std::max(dx, N * double(s.in_floats));
    scratch = std::max(scratch, N * double(s.scratch_floats) + double(s.scratch_fixed_floats));
    int64_t begin = s.param_offset, end = s.param_offset + s.param_count;
    if (s.shared_count > 0)
      begin = std::min(begin, s.shared_offset), end = std::max(end, s.shared_offset + s.shared_count);
    const double window = 2.0 * double(end - begin), state = double(slots) * double(s.param_count);
    peak = std::max(peak, 4.0 * (a + b + saved + dx + scratch + window + state) + ids);
    std::swap(a, b);
  }
  return peak + f.fixed_bytes;
}

cgp::Grouping job_grouping(const Job& job, const ModelFacts& facts, const Cluster& c, const Timing& t) {
  const CgpSection& g = job.parallel.cgp;
  if (!g.groups.empty()) return cgp::Grouping(g.groups.begin(), g.groups.end());
  return cgp::solve(c, cgp::job_workload(job, facts.parameters, cgp_sample_seconds(job, facts, c, t)),
                    cgp::solve_options(job)).grouping;
}

}  // namespace

void cgp_ranks(const Job& job, const ModelFacts& facts, const Cluster& c, const Timing& t, Estimate& e) {
  const cgp::Grouping grouping = cgp::normalized(job_grouping(job, facts, c, t));
  e.cgp_grouping = grouping;
  const int groups = *std::max_element(grouping.begin(), grouping.end()) + 1;
  e.strategy = fmt::format("cgp ({} group(s): {})", groups, cgp::grouping_text(grouping));
  const int64_t n = c.size();
  const int64_t probe = (job.train.global_batch + n - 1) / n;  // every rank times its equal share
  for (int g = 0; g < groups; ++g) {
    std::vector<int> members;
    for (int r = 0; r < int(n); ++r)
      if (grouping[size_t(r)] == g) members.push_back(r);
    const int64_t batch =
        std::max<int64_t>(1, std::llround(double(job.train.global_batch) * double(members.size()) / double(n)));
    double step = 0;
    const size_t first = e.ranks.size();
    data_parallel_ranks(job, facts, c, t, members, batch, fmt::format("group {}", g), e.ranks, step);
    for (size_t i = first; i < e.ranks.size(); ++i) {
      RankEstimate& r = e.ranks[i];
      // Before training: the probe's model beside the rank's own; after, the group's buffers.
      r.memory.other = std::max(0.0, whole_model_bytes(facts) + probe_bytes(job, facts, probe) - r.memory.total());
      // Host: the update sent to the server; the server's global model on rank 0.
      r.host_bytes += 4.0 * double(facts.parameters) * (r.rank == 0 ? 2 : 1);
      r.host_bytes += facts.dataset_bytes;  // the probe loads the data set a second time
      if (r.rank == 0) r.role += " + server";
    }
  }
  if (t.profile) {
    const cgp::Prediction p =
        cgp::predict(c, cgp::job_workload(job, facts.parameters, cgp_sample_seconds(job, facts, c, t)), grouping);
    e.step_s = p.samples_per_s > 0 ? double(job.train.global_batch) / p.samples_per_s : 0.0;
    e.staleness = p.max_staleness;
    e.server_load = p.server_load;
    e.notes.push_back("cgp: step time = the global batch over the groups' predicted samples/s together");
  }
}

void stage_ranks(const Job& job, const ModelFacts& facts, const pipeline::Workload& w, const pipeline::Plan& plan,
                 const pipeline::Prediction& pred, bool timed, const std::vector<int>& rank_of, const std::string& role,
                 std::vector<RankEstimate>& out) {
  const double probe = block_probe_bytes(job, facts, std::min(profile_micro_batch(job), facts.train_samples));
  const pipeline::detail::Prefix prefix(w);
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const pipeline::Stage& st = plan.stages[s];
    const pipeline::StagePrediction& sp = pred.stages[s];
    const double params = pipeline::detail::Prefix::sum(prefix.params, st.first, st.last);
    const pipeline::detail::DeviceBytes bytes =
        pipeline::detail::device_bytes(w, prefix, st.first, st.last, st.recompute, st.ranks.size());
    for (size_t i = 0; i < st.ranks.size(); ++i) {
      RankEstimate r;
      r.rank = rank_of[size_t(st.ranks[i])];
      r.role = fmt::format("{}stage {} (blocks {}-{}{})", role, s, st.first, st.last,
                           st.recompute.empty() ? "" : fmt::format(", recomputing {}", st.recompute.size()));
      r.samples = sp.shares[i];
      r.memory.params = r.memory.grads = params;
      r.memory.optimizer = bytes.state - (2.0 + w.checkpoint_bytes_per_param_byte(st.ranks.size())) * params;
      r.memory.activations = double(sp.shares[i]) * double(sp.in_flight) * bytes.per_sample_in_flight;
      r.memory.workspace = double(sp.shares[i]) * bytes.per_sample_once;
      // Besides the stage: the model's fixed buffers; before training, the blocks timed one at a time.
      // At a checkpoint, a replica of a replicated stage brings its piece's optimizer state together.
      // (The planner's peak holds the piece already: it plans stages that fit with it.)
      const double piece = checkpoint_piece_bytes(job, params, int(st.ranks.size()));
      const double training = r.memory.params + r.memory.grads + r.memory.optimizer + r.memory.activations +
                              r.memory.workspace;
      r.memory.other = std::max(training + facts.fixed_bytes + piece, probe) - training;
      if (timed) {
        r.compute_s = double(plan.micro_batches) * (sp.forward_s + sp.backward_s);
        r.comm_s = double(plan.micro_batches) * sp.link_s + sp.allreduce_s;
        r.update_s = sp.update_s;
      }
      out.push_back(r);
    }
  }
}

void pipeline_ranks(const Job& job, const ModelFacts& facts, const Cluster& c, const Timing& t, Estimate& e) {
  const pipeline::BlockProfile profile = t.profile ? *t.profile : shape_profile(facts, profile_micro_batch(job));
  const pipeline::Workload w = job_pipeline_workload(job, profile);
  const PipelineChoice choice = choose_pipeline_plan(job, w, c);
  const pipeline::Plan& plan = choice.result.plan;
  e.pipeline_plan = choice.result;
  const pipeline::Prediction& pred = choice.result.prediction;
  e.strategy = fmt::format("pipeline ({} stage(s), {} micro-batches, {})", plan.stages.size(), plan.micro_batches,
                           choice.how);
  std::vector<int> every(size_t(c.size()));
  for (int r = 0; r < c.size(); ++r) every[size_t(r)] = r;
  stage_ranks(job, facts, w, plan, pred, t.profile.has_value(), every, "", e.ranks);
  // Ranks the plan leaves out: listed as idle (the job still asks for them).
  std::vector<bool> used(size_t(c.size()), false);
  for (const RankEstimate& r : e.ranks) used[size_t(r.rank)] = true;
  std::string idle;
  int idle_count = 0;
  for (int r = 0; r < c.size(); ++r) {
    if (used[size_t(r)]) continue;
    RankEstimate ir;
    ir.rank = r;
    ir.role = "idle (not in the plan)";
    e.ranks.push_back(ir);
    idle += fmt::format("{}{}", idle_count++ ? ", " : "", r);
  }
  if (idle_count > 0)
    e.notes.push_back(fmt::format("the plan uses {} of the {} ranks; idle: {} (launch.ranks = {} trains the same)",
                                  c.size() - idle_count, c.size(), idle, c.size() - idle_count));
  // The plan's stage times played through its 1F1B schedule (pipeline/schedule.h), which the planner's
  // closed form approximates.
  e.step_s = t.profile ? pipeline::scheduled_minibatch_s(pred, plan.micro_batches) : 0.0;
  if (t.profile && !pred.stages.empty()) {
    // The split of the busiest stage's mini-batch: its micro-batches' compute, the gradient exchange and
    // update after the pipeline drains, and the rest, waiting on other stages (links included): the bubble.
    size_t busiest = 0;
    for (size_t s = 0; s < pred.stages.size(); ++s)
      if (pred.stages[s].busy_fraction > pred.stages[busiest].busy_fraction) busiest = s;
    const pipeline::StagePrediction& sp = pred.stages[busiest];
    e.compute_s = double(plan.micro_batches) * (sp.forward_s + sp.backward_s);
    e.update_s = std::min(sp.update_s, pred.allreduce_tail_s);
    e.comm_s = std::max(0.0, pred.allreduce_tail_s - e.update_s);
    e.bubble_s = std::max(0.0, e.step_s - e.compute_s - e.comm_s - e.update_s);
  }
  e.notes.insert(e.notes.end(), choice.warnings.begin(), choice.warnings.end());
}

}  // namespace dp::estimate::detail
