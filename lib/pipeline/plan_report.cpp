// The pipeline plan of `dptrain plan` (plan_report.h) as text, a comparison of the plans and a table of
// each one's stages, and as one JSON object.
#include "lib/pipeline/plan_report.h"

#include <fmt/format.h>

#include <cmath>

#include "lib/core/json.h"
#include "lib/core/printf_string.h"

namespace dp::pipeline {
namespace {

// Ranks (or blocks) as ranges, "0-3,8", or "N ranks" when longer than 24 characters.
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

std::string stages_text(const std::string& title, const PlanResult& r) {
  const auto& pr = r.prediction;
  std::string out = printf_string("%s\n  %5s %-10s %-24s %8s %8s %8s %8s %8s %9s %5s %13s  %s\n", title.c_str(),
                                  "stage", "blocks", "ranks", "fwd ms", "bwd ms", "link ms", "ar ms", "upd ms", "busy",
                                  "fly", "peak/mem GB", "recomputed");
  for (size_t s = 0; s < r.plan.stages.size(); ++s) {
    const auto& st = r.plan.stages[s];
    const auto& sp = pr.stages[s];
    double peak = 0, memory = 0;
    for (size_t i = 0; i < sp.peak_bytes.size(); ++i)
      if (sp.peak_bytes[i] > peak) peak = sp.peak_bytes[i], memory = sp.memory_bytes[i];
    out += printf_string("  %5zu %-10s %-24s %8.3f %8.3f %8.3f %8.3f %8.3f %8.1f%% %5lld %13s  %s\n", s,
                         fmt::format("{}-{}", st.first, st.last).c_str(), ranks_text(st.ranks).c_str(),
                         sp.forward_s * 1e3, sp.backward_s * 1e3, sp.link_s * 1e3, sp.allreduce_s * 1e3,
                         sp.update_s * 1e3, sp.busy_fraction * 100, (long long)sp.in_flight,
                         (memory > 0 ? fmt::format("{:.3g}/{:.3g}{}", peak / 1e9, memory / 1e9, sp.fits ? "" : "!")
                                     : fmt::format("{:.3g}/-", peak / 1e9)).c_str(),
                         blocks_text(st.recompute).c_str());
  }
  return out;
}

std::string summary_row(const char* name, const PlanResult& r) {
  int devices = 0;
  for (const auto& s : r.plan.stages) devices += int(s.ranks.size());
  const auto& p = r.prediction;
  return printf_string("  %-14s %6zu %7d %5lld %12.3f %12.1f %8.1f%% %12.3f  %s\n", name, r.plan.stages.size(),
                       devices, (long long)r.plan.micro_batches, p.minibatch_s * 1e3, p.samples_per_s,
                       p.bubble_fraction * 100, p.bottleneck_s * 1e3, r.feasible ? "fits" : "does not fit");
}

// The plans side by side, and how the chosen one compares with the others.
std::string comparison_text(const PlanReport& r) {
  std::string out = printf_string("\n  %-14s %6s %7s %5s %12s %12s %9s %12s\n", "", "stages", "devices", "M", "T ms",
                                  "samples/s", "bubble", "bottleneck ms");
  out += summary_row(r.from_job ? "run's plan" : "planner", r.planned);
  if (r.given) out += summary_row("--stages", *r.given);
  out += summary_row("naive", r.naive);
  out += summary_row("one stage", r.one_stage);
  // The others that fit as ratios of samples/s; those that do not, named after.
  std::string ratios, misfits;
  auto versus = [&](const char* name, const char* plan, const PlanResult& b) {
    if (b.feasible)
      ratios += fmt::format("{}{:.2f}x {}", ratios.empty() ? "" : ", ",
                            r.planned.prediction.samples_per_s / b.prediction.samples_per_s, name);
    else
      misfits += fmt::format("{}{}", misfits.empty() ? "" : " and ", plan);
  };
  versus("the naive plan's", "the naive plan", r.naive);
  versus("one stage's", "one stage", r.one_stage);
  if (r.given) versus("the given stages'", "the given stages", *r.given);
  const char* ours = r.from_job ? "the run's plan's" : "the planner's";
  out += "verdict: " + (ratios.empty() ? "" : fmt::format("{} samples/s are {}", ours, ratios)) +
         (misfits.empty() ? "" : fmt::format("{}{} {} not fit", ratios.empty() ? "" : "; ", misfits,
                                             misfits.find(" and ") == std::string::npos ? "does" : "do")) +
         "\n\n";
  return out;
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

std::string plan_line(const PlanResult& r, bool timed) {
  std::string stages;
  size_t recomputed = 0;
  for (const Stage& st : r.plan.stages) {
    if (!stages.empty()) stages += ", ";
    stages += st.first == st.last ? std::to_string(st.first) : fmt::format("{}-{}", st.first, st.last);
    if (st.ranks.size() > 1) stages += fmt::format("x{}", st.ranks.size());
    recomputed += st.recompute.size();
  }
  const int blocks = r.plan.stages.empty() ? 0 : r.plan.stages.back().last + 1;
  const double rate = r.prediction.samples_per_s;
  return fmt::format("{} stage{} {}; {} micro-batches; recomputing {} of {} blocks{}", r.plan.stages.size(),
                     r.plan.stages.size() == 1 ? "" : "s", stages, r.plan.micro_batches, recomputed, blocks,
                     timed && std::isfinite(rate) && rate > 0 ? fmt::format("; {:.1f} samples/s", rate) : "");
}

std::string plan_text(const PlanReport& r) {
  std::string out = printf_string(
      "job %s: pipeline of %zu blocks from %s (%s), times for minibatches of %g samples; global batch %lld\n",
      r.job.c_str(), r.blocks, r.profile_source.c_str(), r.chain ? "a chain" : "a graph, linearised", r.profile_batch,
      (long long)r.global_batch);
  out += printf_string("cluster: %s\n", r.cluster.c_str());
  out += printf_string("1F1B with a flush per mini-batch; plan: %s, %.3f s\n", r.how.c_str(), r.planning_s);
  for (const std::string& line : r.warnings) out += printf_string("warning: %s\n", line.c_str());
  out += comparison_text(r);
  const PlanResult& planned = r.planned;
  out += stages_text(fmt::format("{} stages (M = {} micro-batches of {} samples):",
                                 r.from_job ? "the run's" : "planner's", planned.plan.micro_batches,
                                 r.global_batch / planned.plan.micro_batches),
                     planned);
  if (r.given)  // after an empty line ("\n" + text would trip GCC 12's -Wrestrict false positive)
    out.append("\n").append(stages_text(fmt::format("--stages (M = {}):", r.given->plan.micro_batches), *r.given));
  return out;
}

std::string plan_json(const PlanReport& r) {
  return printf_string(
      "{\"job\":%s,\"profile\":%s,\"blocks\":%zu,\"chain\":%s,\"profile_batch\":%.9g,\"global_batch\":%lld,"
      "\"ranks\":%d,\"cluster\":%s,\"planning_s\":%.6g,\"plan\":%s,\"naive\":%s,\"one_stage\":%s,"
      "\"given\":%s}\n",
      json_quoted(r.job).c_str(), json_quoted(r.profile_source).c_str(), r.blocks, r.chain ? "true" : "false",
      r.profile_batch, (long long)r.global_batch, r.ranks, json_quoted(r.cluster).c_str(), r.planning_s,
      result_json(r.planned).c_str(), result_json(r.naive).c_str(), result_json(r.one_stage).c_str(),
      r.given ? result_json(*r.given).c_str() : "null");
}

}  // namespace dp::pipeline
