// make_snapshot: progress, ETA, the curves and the per-rank window figures from a RunRecord.
#include <algorithm>
#include <map>

#include "lib/monitor/snapshot.h"

#include "lib/job/job_enums.h"

namespace dp::monitor {
namespace {

// The logged steps in file order, each with its lines (one per rank; under cgp one per rank and exchange).
using Steps = std::vector<std::pair<int64_t, std::vector<const RankPoint*>>>;
Steps by_step(const std::vector<RankPoint>& train) {
  Steps steps;
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

// What the record says of the run as a whole: its name and plan, its summary, where it was resumed and
// its evaluations.
Snapshot describe_run(const RunRecord& record) {
  Snapshot s;
  s.dir = record.dir;
  s.seconds_since_write = record.seconds_since_write;
  s.summary = record.summary;
  s.grouping = record.grouping;
  s.language_model = record.language_model;
  if (record.start) {
    s.name = record.start->name;
    s.strategy = record.start->strategy;
    s.device = record.start->device;
    s.total_steps = record.start->total_steps;
  }
  for (size_t i = 1; i < record.invocations.size(); ++i) {
    const Invocation& inv = record.invocations[i];
    s.resumes.push_back({inv.t, inv.start ? inv.start->first_step : 0, inv.start ? inv.start->ranks : 0});
  }
  s.evals = record.evals;
  if (!record.evals.empty()) s.last_eval = record.evals.back();
  return s;
}

// How the newest invocation began: its start line, if it has one (else the newest before it describes
// the run and its first logged step stands for its start).
struct NewestStart {
  int invocation = 0;
  const RunStart* own_start = nullptr;  // null: it has no start line of its own
  int64_t first_step = 1;
  double t = 0;
};

NewestStart find_newest_start(const RunRecord& record) {
  NewestStart n;
  n.invocation = std::max(0, int(record.invocations.size()) - 1);
  n.own_start = record.invocations.empty() ? nullptr
                : record.invocations.back().start ? &*record.invocations.back().start
                                                  : nullptr;
  n.t = record.invocations.empty() ? 0 : record.invocations.back().t;
  if (n.own_start) {
    n.t = n.own_start->t;
    n.first_step = n.own_start->first_step;
    return n;
  }
  for (const RankPoint& p : record.train)
    if (p.invocation == n.invocation) {
      n.first_step = p.step;
      break;
    }
  return n;
}

// The newest invocation's ranks: its start line's, or more when its lines name more.
int newest_ranks(const RunRecord& record, const NewestStart& newest) {
  int ranks = newest.own_start ? newest.own_start->ranks : 0;
  for (const RankPoint& p : record.train)
    if (p.invocation == newest.invocation) ranks = std::max(ranks, p.rank + 1);
  return ranks;
}

// The ranks of any invocation, for the curves.
int ranks_of_any_invocation(const RunRecord& record, int newest_ranks) {
  int ranks = newest_ranks;
  for (const RankPoint& p : record.train) ranks = std::max(ranks, p.rank + 1);
  return ranks;
}

// One point per logged step: its newest time, the first line's loss and rate, and each rank's time
// blocked (wait + comm; summed over its lines under cgp).
std::vector<StepPoint> curve_of(const Steps& steps, int all_ranks) {
  std::vector<StepPoint> curve;
  for (const auto& [step, lines] : steps) {
    StepPoint point{step, 0, lines.front()->loss, lines.front()->samples_per_sec, lines.front()->invocation,
                    std::vector<double>(size_t(all_ranks), -1)};
    for (const RankPoint* p : lines) {
      point.t = std::max(point.t, p->t);
      if (p->rank >= 0 && p->rank < all_ranks)
        point.blocked_ms[size_t(p->rank)] = std::max(0.0, point.blocked_ms[size_t(p->rank)]) + p->wait_ms + p->comm_ms;
    }
    curve.push_back(std::move(point));
  }
  return curve;
}

// The window: the newest `window_steps` logged steps of the newest invocation (none before it has
// logged one: a resume that has just begun shows no ranks yet, not the ranks of the run before).
struct Window {
  size_t newest_from = 0;  // the newest invocation's first logged step, as an index into the curve
  size_t from = 0;         // the window's first (the curve's size: the window is empty)
};

Window window_of(const std::vector<StepPoint>& curve, int newest_invocation, int window_steps) {
  Window w;
  w.newest_from = curve.size();
  while (w.newest_from > 0 && curve[w.newest_from - 1].invocation == newest_invocation) --w.newest_from;
  w.from = std::max(w.newest_from, curve.size() > size_t(window_steps) ? curve.size() - size_t(window_steps) : 0);
  return w;
}

// The window's rate, its steps and every rank's figures over it (nothing when it is empty).
void measure_window(const Steps& steps, const Window& w, Snapshot& s) {
  std::vector<const RankPoint*> lines;
  std::vector<double> rates;
  for (size_t i = w.from; i < steps.size(); ++i) {
    lines.insert(lines.end(), steps[i].second.begin(), steps[i].second.end());
    rates.push_back(s.curve[i].samples_per_sec);
  }
  if (w.from < steps.size()) {
    s.samples_per_sec = combined_rate(rates);
    s.window_first_step = steps[w.from].first;
    s.window_last_step = steps.back().first;
    s.window_steps = int64_t(steps.size() - w.from);
    s.rank_figures = window_figures(lines, s.ranks);
  }
}

// What the window's lines do not carry: the finished run's memory peaks and the pipeline plan's
// expected compute per sample.
void add_peaks_and_expectations(const RunRecord& record, std::vector<RankFigures>& figures) {
  if (record.summary)
    for (RankFigures& f : figures) {
      const size_t r = size_t(f.rank);
      if (r < record.summary->allocated_peak_bytes.size()) f.allocated_peak_bytes = record.summary->allocated_peak_bytes[r];
      if (r < record.summary->resident_peak_bytes.size()) f.resident_peak_bytes = record.summary->resident_peak_bytes[r];
    }
  for (const PipelineRank& p : record.pipeline)
    for (RankFigures& f : figures)
      if (f.rank == p.rank && f.stage == p.stage) f.expected_ms_per_sample = p.expected_ms_per_sample;
}

// Seconds per step over the window (from the step before it when there is one), within the steps of
// the newest process (a resumed run's start-up is not a step); else since that process started.
double seconds_per_step(const std::vector<StepPoint>& curve, const Window& w, const NewestStart& newest) {
  if (w.from >= curve.size()) return 0;
  const StepPoint& last = curve.back();
  size_t base = w.from > w.newest_from ? w.from - 1 : w.from;
  while (base + 1 < curve.size() && curve[base].step < newest.first_step) ++base;
  if (curve.size() - base >= 2 && last.step > curve[base].step)
    return (last.t - curve[base].t) / double(last.step - curve[base].step);
  if (last.step >= newest.first_step && newest.own_start)
    return (last.t - newest.t) / double(last.step - newest.first_step + 1);
  return 0;
}

// Progress and ETA against the total steps, and whether the run has finished, is running or has stalled.
void judge_progress(const RunRecord& record, Snapshot& s) {
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
    const StepPoint& newest_step = s.curve.back();
    const double step_gap = s.curve.size() >= 2 ? (newest_step.t - s.curve.front().t) / double(s.curve.size() - 1) : 0;
    s.state = s.seconds_since_write > std::max(60.0, 20 * step_gap) ? "stalled" : "running";
  }
}

}  // namespace

Snapshot make_snapshot(const RunRecord& record, int window_steps) {
  Snapshot s = describe_run(record);
  const NewestStart newest = find_newest_start(record);
  s.ranks = newest_ranks(record, newest);
  const Steps steps = by_step(record.train);
  s.curve = curve_of(steps, ranks_of_any_invocation(record, s.ranks));
  if (s.curve.empty()) {
    s.state = record.summary ? "finished" : "starting";
    if (record.summary) s.step = record.summary->steps;
    return s;
  }
  const StepPoint& newest_step = s.curve.back();
  s.step = newest_step.step;
  s.epoch = record.train.back().epoch;
  s.loss = newest_step.loss;
  s.elapsed_seconds = std::max(newest_step.t, newest.t);
  if (record.summary) s.step = std::max(s.step, record.summary->steps);

  const Window window = window_of(s.curve, newest.invocation, window_steps);
  measure_window(steps, window, s);
  add_peaks_and_expectations(record, s.rank_figures);
  s.slow = find_slow_ranks(s.rank_figures, s.strategy == name_of(StrategyKind::pipeline));
  s.seconds_per_step = seconds_per_step(s.curve, window, newest);
  judge_progress(record, s);
  return s;
}

}  // namespace dp::monitor
