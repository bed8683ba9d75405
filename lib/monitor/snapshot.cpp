// make_snapshot: progress, ETA, the curves and the per-rank window figures from a RunRecord.
#include <algorithm>
#include <map>

#include "lib/monitor/snapshot.h"

namespace dp::monitor {
namespace {

// The logged steps in file order, each with its lines (one per rank; under cgp one per rank and exchange).
std::vector<std::pair<int64_t, std::vector<const RankPoint*>>> by_step(const std::vector<RankPoint>& train) {
  std::vector<std::pair<int64_t, std::vector<const RankPoint*>>> steps;
  for (const RankPoint& p : train) {
    if (steps.empty() || steps.back().first != p.step) steps.push_back({p.step, {}});
    steps.back().second.push_back(&p);
  }
  return steps;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::vector<RankFigures> window_figures(const std::vector<const RankPoint*>& lines, int ranks) {
  std::vector<RankFigures> f(static_cast<size_t>(ranks));
  std::vector<int> count(size_t(ranks), 0);
  std::vector<double> compute_total(size_t(ranks), 0);
  std::vector<std::vector<double>> per_sample(static_cast<size_t>(ranks));
  int64_t samples = 0;
  for (size_t r = 0; r < f.size(); ++r) f[r].rank = int(r);
  for (const RankPoint* p : lines) {
    if (p->rank < 0 || p->rank >= ranks) continue;
    RankFigures& r = f[size_t(p->rank)];
    ++count[size_t(p->rank)];
    r.samples += p->local_batch;
    samples += p->local_batch;
    compute_total[size_t(p->rank)] += p->compute_ms;
    if (p->local_batch > 0) per_sample[size_t(p->rank)].push_back(p->compute_ms / double(p->local_batch));
    r.compute_ms += p->compute_ms;
    r.comm_ms += p->comm_ms;
    r.wait_ms += p->wait_ms;
    r.update_ms += p->update_ms;
    r.group = p->group;
    r.stage = p->stage;
    r.allocated_peak_bytes = p->allocated_peak_bytes;  // lines are in time order: the newest stays
    r.resident_bytes = p->resident_bytes;
    r.gpu_used_bytes = p->gpu_used_bytes;
    r.gpu_util_percent = p->gpu_util_percent;
  }
  for (size_t r = 0; r < f.size(); ++r) {
    if (count[r] == 0) continue;
    const double n = count[r];
    // The median over the window's lines: one step slowed by preemption (ranks sharing cores) or by a
    // pause does not move it.
    if (f[r].samples > 0 && compute_total[r] > 0) {
      f[r].compute_ms_per_sample = median(per_sample[r]);
      f[r].compute_samples_per_sec = f[r].compute_ms_per_sample > 0 ? 1000 / f[r].compute_ms_per_sample : 0;
    }
    f[r].share = samples > 0 ? double(f[r].samples) / double(samples) : 0;
    f[r].compute_ms /= n;
    f[r].comm_ms /= n;
    f[r].wait_ms /= n;
    f[r].update_ms /= n;
  }
  return f;
}

// Samples per second over steps each of `samples` samples at `rate`: the samples over the time they
// took, as summary.json's samples_per_sec is (not the mean of the rates, which a few fast steps inflate).
double combined_rate(const std::vector<double>& rates) {
  double seconds = 0;
  int n = 0;
  for (double r : rates)
    if (r > 0) seconds += 1 / r, ++n;
  return seconds > 0 ? double(n) / seconds : 0;
}

}  // namespace

Snapshot make_snapshot(const RunRecord& record, int window_steps) {
  Snapshot s;
  s.dir = record.dir;
  s.seconds_since_write = record.seconds_since_write;
  s.summary = record.summary;
  s.grouping = record.grouping;
  s.language_model = record.language_model;
  // The newest invocation: its start line, if it has one (else the newest before it describes the run).
  const int newest = std::max(0, int(record.invocations.size()) - 1);
  const RunStart* own_start = record.invocations.empty() ? nullptr
                              : record.invocations.back().start ? &*record.invocations.back().start
                                                                : nullptr;
  int64_t first_step = 1;
  double start_t = record.invocations.empty() ? 0 : record.invocations.back().t;
  if (record.start) {
    s.name = record.start->name;
    s.strategy = record.start->strategy;
    s.device = record.start->device;
    s.total_steps = record.start->total_steps;
  }
  if (own_start) {
    start_t = own_start->t;
    s.ranks = own_start->ranks;
    first_step = own_start->first_step;
  }
  int all_ranks = s.ranks;  // of any invocation, for the curves
  bool newest_has_lines = false;
  for (const RankPoint& p : record.train) {
    all_ranks = std::max(all_ranks, p.rank + 1);
    if (p.invocation == newest) {
      s.ranks = std::max(s.ranks, p.rank + 1);
      if (!newest_has_lines && !own_start) first_step = p.step;  // the first logged step stands for its start
      newest_has_lines = true;
    }
  }
  for (size_t i = 1; i < record.invocations.size(); ++i) {
    const Invocation& inv = record.invocations[i];
    s.resumes.push_back({inv.t, inv.start ? inv.start->first_step : 0, inv.start ? inv.start->ranks : 0});
  }
  s.evals = record.evals;
  if (!record.evals.empty()) s.last_eval = record.evals.back();

  const auto steps = by_step(record.train);
  for (const auto& [step, lines] : steps) {
    StepPoint point{step, 0, lines.front()->loss, lines.front()->samples_per_sec, lines.front()->invocation,
                    std::vector<double>(size_t(all_ranks), -1)};
    for (const RankPoint* p : lines) {
      point.t = std::max(point.t, p->t);
      if (p->rank >= 0 && p->rank < all_ranks)
        point.blocked_ms[size_t(p->rank)] = std::max(0.0, point.blocked_ms[size_t(p->rank)]) + p->wait_ms + p->comm_ms;
    }
    s.curve.push_back(std::move(point));
  }
  if (s.curve.empty()) {
    s.state = record.summary ? "finished" : "starting";
    if (record.summary) s.step = record.summary->steps;
    return s;
  }
  const StepPoint& newest_step = s.curve.back();
  s.step = newest_step.step;
  s.epoch = record.train.back().epoch;
  s.loss = newest_step.loss;
  s.elapsed_seconds = std::max(newest_step.t, start_t);
  if (record.summary) s.step = std::max(s.step, record.summary->steps);

  // The window: the newest `window_steps` logged steps of the newest invocation (none before it has
  // logged one: a resume that has just begun shows no ranks yet, not the ranks of the run before).
  size_t newest_from = steps.size();
  while (newest_from > 0 && s.curve[newest_from - 1].invocation == newest) --newest_from;
  const size_t from = std::max(newest_from, steps.size() > size_t(window_steps) ? steps.size() - size_t(window_steps) : 0);
  std::vector<const RankPoint*> lines;
  std::vector<double> rates;
  for (size_t i = from; i < steps.size(); ++i) {
    lines.insert(lines.end(), steps[i].second.begin(), steps[i].second.end());
    rates.push_back(s.curve[i].samples_per_sec);
  }
  if (from < steps.size()) {
    s.samples_per_sec = combined_rate(rates);
    s.window_first_step = steps[from].first;
    s.window_last_step = steps.back().first;
    s.window_steps = int64_t(steps.size() - from);
    s.rank_figures = window_figures(lines, s.ranks);
  }
  if (record.summary)
    for (RankFigures& f : s.rank_figures) {
      const size_t r = size_t(f.rank);
      if (r < record.summary->allocated_peak_bytes.size()) f.allocated_peak_bytes = record.summary->allocated_peak_bytes[r];
      if (r < record.summary->resident_peak_bytes.size()) f.resident_peak_bytes = record.summary->resident_peak_bytes[r];
    }
  for (const PipelineRank& p : record.pipeline)
    for (RankFigures& f : s.rank_figures)
      if (f.rank == p.rank && f.stage == p.stage) f.expected_ms_per_sample = p.expected_ms_per_sample;
  s.slow = find_slow_ranks(s.rank_figures, s.strategy == "pipeline");

  // Seconds per step over the window (from the step before it when there is one), within the steps of
  // the newest process (a resumed run's start-up is not a step); else since that process started.
  if (from < steps.size()) {
    size_t base = from > newest_from ? from - 1 : from;
    while (base + 1 < s.curve.size() && s.curve[base].step < first_step) ++base;
    if (s.curve.size() - base >= 2 && newest_step.step > s.curve[base].step)
      s.seconds_per_step = (newest_step.t - s.curve[base].t) / double(newest_step.step - s.curve[base].step);
    else if (newest_step.step >= first_step && own_start)
      s.seconds_per_step = (newest_step.t - start_t) / double(newest_step.step - first_step + 1);
  }
  if (s.total_steps > 0) {
    s.progress = std::min(1.0, double(s.step) / double(s.total_steps));
    if (!record.summary && s.seconds_per_step > 0)
      s.eta_seconds = double(std::max<int64_t>(0, s.total_steps - s.step)) * s.seconds_per_step;
  }
  if (record.summary) {
    s.state = "finished";
    s.eta_seconds = 0;
  } else {
    // No line for much longer than a logged step takes: the run has stopped without finishing.
    const double step_gap = s.curve.size() >= 2 ? (newest_step.t - s.curve.front().t) / double(s.curve.size() - 1) : 0;
    s.state = s.seconds_since_write > std::max(60.0, 20 * step_gap) ? "stalled" : "running";
  }
  return s;
}

}  // namespace dp::monitor
