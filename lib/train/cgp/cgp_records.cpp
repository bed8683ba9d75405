// What CGP's parameter server (cgp_exchange.h) records as updates come in: the steps' completion (each
// step's samples and loss, the ranks' metrics lines, emitted in order for the trainer) and every rank's
// recent compute speed, which ends a phase early when it drifts; and the phase's "groups" line.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "lib/core/error.h"
#include "lib/train/cgp/cgp_exchange.h"

namespace dp::cgp_detail {

using Clock = std::chrono::steady_clock;

void report_steps(std::vector<StepRecord> steps, const StepSink& sink) {
  for (StepRecord& r : steps) {
    if (!std::isfinite(r.loss))
      throw NonFiniteError("[train] on_nonfinite", fmt::format("step {}: the training loss is {}; the run stops "
                                                               "here, its newest checkpoint is from before it",
                                                               r.step, r.loss),
                           "lower [optim] lr (or add warmup_steps)", false);
    for (const TrainLine& line : r.ranks) sink.record(train_line_json(line));
    r.ranks.clear();
    sink.step(r);
  }
}

std::vector<double> ParameterServer::recent_speeds() const {
  std::vector<double> out;
  for (std::vector<double> r : recent_) {
    std::sort(r.begin(), r.end());
    out.push_back(r.size() == 3 ? r[1] : 0);
  }
  return out;
}

// Each member's compute speed in this exchange; when one has drifted past the threshold (the same way in
// its last 3), the phase ends early and a regrouping decision follows it.
void ParameterServer::watch_drift(const std::vector<ExchangeRequest>& requests, int group) {
  for (size_t i = 0; i < requests.size(); ++i) {
    const ExchangeRequest& r = requests[i];
    if (r.samples <= 0 || !(r.compute_ms > 0)) continue;
    const int rank = members_[size_t(group)][i];
    std::vector<double>& last = recent_[size_t(rank)];
    if (last.size() == 3) last.erase(last.begin());
    last.push_back(double(r.samples) / (r.compute_ms / 1000));
    if (drift_ <= 0 || !drift_reason_.empty() || last.size() < 3) continue;
    const double base = baseline_[size_t(rank)];
    int up = 0, down = 0;
    for (double v : last) up += v > base * (1 + drift_), down += v < base * (1 - drift_);
    if (up < 3 && down < 3) continue;
    end_after_current_step();  // the decision follows
    std::vector<double> sorted = last;
    std::sort(sorted.begin(), sorted.end());
    drift_reason_ = fmt::format("rank {}'s speed drifted by {:+.0f}%", rank, (sorted[1] / base - 1) * 100);
  }
}

// The phase ends at the end of the step the next samples belong to (the exchange being served still gets
// a chunk: a lone group's progress-only exchange is then followed by its update), or where it ends anyway
// when its samples are all handed out.
void ParameterServer::end_after_current_step() {
  const int64_t step = clock_.step_of(cursor_) + 1;
  if (step < reached_) {
    reached_ = step;
    boundary_ = clock_.step_begin(step);
  }
}

// A group's update of the chunk [begin, begin + count) is in: its loss goes to the steps it overlaps, in
// proportion; its members' lines wait for the next completed step; completed steps are emitted in order,
// each with its time at the phase's average rate so far (cgp_exchange.h): an update completing several
// steps at once gives each the rate samples came in at, not the first the time since the last emitted
// step and the others none (which reported a billion samples/s beside 5,000).
void ParameterServer::account(const ExchangeRequest& leader, double loss_sum, int group, int64_t staleness,
                              double held_ms, const std::vector<ExchangeRequest>& members) {
  const double elapsed = std::chrono::duration<double>(Clock::now() - phase_start_).count();
  applied_in_phase_ += leader.chunk_count;
  const int64_t begin = leader.chunk_begin, end = begin + leader.chunk_count;
  for (int64_t step = clock_.step_of(begin); step < first_step_ + int64_t(step_samples_.size()); ++step) {
    const int64_t from = std::max(begin, clock_.step_begin(step)), to = std::min(end, clock_.step_end(step));
    if (from >= to) break;
    const size_t at = size_t(step - first_step_);
    step_samples_[at] += to - from;
    step_loss_[at] += loss_sum * double(to - from) / double(leader.chunk_count);
  }
  for (size_t i = 0; i < members.size(); ++i) {
    const ExchangeRequest& m = members[i];
    TrainLine line;
    const int rank = members_[size_t(group)][i];
    line.rank = rank_names_.empty() ? rank : rank_names_[size_t(rank)];
    line.strategy_fields = group_fields(group, double(staleness), held_ms, m.exchange_ms);
    line.lr = m.lr;
    line.loss = leader.chunk_count > 0 ? loss_sum / double(leader.chunk_count * terms_per_sample_) : 0;
    line.times = StepTimes{m.compute_ms, held_ms, m.comm_ms, 0, m.samples, m.samples_digest};
    lines_.push_back(line);
  }
  while (next_emit_ < first_step_ + int64_t(step_samples_.size())) {
    const size_t at = size_t(next_emit_ - first_step_);
    const int64_t size = clock_.step_end(next_emit_) - clock_.step_begin(next_emit_);
    if (step_samples_[at] < size) break;
    StepRecord r;
    r.step = next_emit_ + 1;
    r.epoch = next_emit_ / clock_.steps_per_epoch;
    r.samples = size;
    r.lr = leader.lr;
    r.loss = step_loss_[at] / double(size * terms_per_sample_);
    // The phase's average rate so far; its last step also carries what the last updates took after
    // the other groups ran out of samples.
    emitted_in_phase_ += size;
    r.seconds = elapsed * double(size) / double(std::max(applied_in_phase_, emitted_in_phase_));
    if (r.step == reached_ && elapsed - assigned_seconds_ > r.seconds) r.seconds = elapsed - assigned_seconds_;
    assigned_seconds_ += r.seconds;
    // The run's rate, as the other strategies' lines have it (the rank's own speed is local_batch over
    // compute_ms).
    for (TrainLine& l : lines_) {
      l.step = r.step;
      l.epoch = r.epoch;
      l.samples_per_sec = r.seconds > 0 ? double(size) / r.seconds : 0;
    }
    r.ranks = std::move(lines_);
    lines_.clear();
    completed_.push_back(std::move(r));
    ++next_emit_;
  }
}

PhaseGroupsLine phase_groups_line(int64_t step, const cgp::Grouping& grouping, const cgp::Prediction& predicted,
                                  const std::vector<GroupTally>& tallies, double phase_seconds) {
  PhaseGroupsLine line;
  line.step = step;
  line.grouping = cgp::grouping_text(grouping);
  line.predicted_samples_per_sec = predicted.samples_per_s;
  int64_t samples = 0;
  for (size_t g = 0; g < predicted.groups.size() && g < tallies.size(); ++g) {
    const cgp::GroupPrediction& gp = predicted.groups[g];
    const GroupTally& t = tallies[g];
    const double span_s = std::chrono::duration<double>(t.last - t.first).count();
    const double updates = double(std::max<int64_t>(1, t.updates));
    PhaseGroupsLine::Group out;
    out.members = gp.members;
    // The runtime's exchange time includes the all-gather after it.
    out.predicted = {gp.step_s * 1e3, (gp.exchange_s + gp.gather_s) * 1e3, gp.held_s * 1e3, gp.cycle_s * 1e3,
                     gp.samples_per_s, gp.staleness};
    out.measured = {t.local_steps > 0 ? t.step_ms / double(t.local_steps) : 0, t.exchange_ms / updates,
                    t.held_ms / updates, span_s * 1e3 / updates, span_s > 0 ? double(t.samples) / span_s : 0,
                    t.staleness / updates};
    samples += t.samples;
    line.groups.push_back(std::move(out));
  }
  line.measured_samples_per_sec = phase_seconds > 0 ? double(samples) / phase_seconds : 0;
  return line;
}

}  // namespace dp::cgp_detail
