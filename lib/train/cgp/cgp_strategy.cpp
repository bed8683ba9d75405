// Strategy "cgp": cooperative grouping (lib/cgp). The ranks form groups (a fixed grouping from the job,
// or the solver's on measured speeds); inside a group, synchronous data parallelism exactly as "data"
// (MRA and I-DAT over the group's sub-communicator); between groups, asynchronous exchanges with the
// global model on rank 0's parameter server (cgp_exchange.h). The run proceeds in phases that end at the
// trainer's pauses and at regrouping points; at a phase's end every group has delivered its last update,
// so the global model is the run's model. Regrouping re-solves on the speeds measured in the phase and,
// when the model predicts enough gain, rebuilds the groups; replicas restart from the global model and
// each new group takes the optimizer state of its first rank's old group.
#include "lib/train/cgp/cgp_strategy.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <utility>

#include "lib/cgp/cgp.h"
#include "lib/cluster/cluster.h"
#include "lib/core/error.h"
#include "lib/core/trace.h"
#include "lib/train/cgp/cgp_exchange.h"
#include "lib/train/cgp/cgp_group.h"
#include "lib/measure/job_links.h"
#include "lib/measure/speed_probe.h"

namespace dp {
namespace {

using namespace cgp_detail;
using Clock = std::chrono::steady_clock;

// Rank 0's decision, sent to every rank: a grouping, or the error that prevented one.
struct Decision {
  int32_t ok = 1, adopted = 0;
  char error[480] = {};
};

class CgpStrategy final : public Strategy {
 public:
  explicit CgpStrategy(StrategyInputs in)
      : in_(std::move(in)),
        cluster_(cluster_from_job(in_.job)),
        clock_{in_.train_set.count, in_.job.train.global_batch, in_.steps_per_epoch},
        emulator_(in_.job, in_.comm.rank()) {
    if (in_.gpu_queue)
      throw JobError("parallel.strategy", "strategy \"cgp\" runs on CPU ranks only",
                     "set [train] device = \"cpu\", or strategy = \"data\" on GPUs");
    if (in_.comm.size() != in_.job.launch.ranks)  // the groups are chosen on [cluster]'s ranks
      throw JobError("[launch] ranks", fmt::format("CGP's groups are chosen for the job's {} rank(s), this launch has {}",
                                                   in_.job.launch.ranks, in_.comm.size()),
                     "launch the job's ranks, or set launch.ranks to the launch's");
    const Job& job = in_.job;
    // Speeds are measured in samples per second: a sample takes 1 / speed seconds.
    workload_ = cgp::job_workload(job, int64_t(in_.model.params().size()), 1);
    server_comm_ = in_.comm.split(0, in_.comm.rank());
    // The speeds (and jitter) the first grouping is chosen for: every rank times its own steps, all at
    // once, as they will train (the emulator paces by CPU time, so ranks sharing cores do not stretch
    // each other's emulated machines).
    const SpeedProbe probe = measure_compute_speed(job, in_.comm, 25, 5);
    speeds_ = in_.comm.allgather_value(probe.samples_per_second);
    workload_.compute_cv = mean(in_.comm.allgather_value(probe.cv));
    if (!job.parallel.cgp.groups.empty()) {
      grouping_ = cgp::normalized(std::vector<int>(job.parallel.cgp.groups.begin(), job.parallel.cgp.groups.end()));
      how_ = "fixed by [parallel.cgp] groups";
    } else {
      decide(solve_on(speeds_), true);
      how_ = fmt::format("chosen by {} on measured speeds", name_of(job.parallel.cgp.solver));
    }
    if (in_.comm.rank() == 0) {
      const auto p = in_.model.params();
      server_ = std::make_unique<ParameterServer>(*server_comm_, std::vector<float>(p.begin(), p.end()),
                                                  job.parallel.cgp, clock_, in_.model.targets_per_sample());
    }
    build_group();
  }

  std::vector<std::string> describe() const override {
    const cgp::Prediction p = cgp::predict(cluster_.with_speeds(speeds_), workload_, grouping_);
    std::string speeds;
    for (double s : speeds_) speeds += fmt::format("{}{:.0f}", speeds.empty() ? "" : ", ", s);
    std::vector<std::string> lines = {
        fmt::format("CGP: groups {} ({} [{}] samples/s; predicted {:.0f} samples/s, staleness {:.2f}); exchange "
                    "every {} local step(s), staleness bound {}{}; global model on rank 0",
                    cgp::grouping_text(grouping_), how_, speeds, p.samples_per_s, p.max_staleness,
                    in_.job.parallel.cgp.exchange_every, in_.job.parallel.cgp.max_staleness,
                    in_.job.parallel.cgp.deterministic ? ", deterministic order" : ""),
        "inside groups, gradients: " + group_->update().describe()};
    const std::string links = links_text(in_.job);
    if (!links.empty()) lines.push_back(links);
    return lines;
  }

  void resume(const Checkpoint& from) override {
    in_.model.params_from_host(from.params);
    if (server_) server_->set_global(from.params);
    const bool grouped = from.groups.size() == size_t(in_.comm.size());  // a "cgp" checkpoint of this size
    if (grouped && in_.job.parallel.cgp.groups.empty() && cgp::normalized(from.groups) != grouping_) {
      grouping_ = cgp::normalized(from.groups);
      how_ = "from the checkpoint";
      build_group();
    }
    // Each group continues from the saved state of its first rank's group then.
    const int me = in_.comm.rank();
    const int first = int(std::find(grouping_.begin(), grouping_.end(), grouping_[size_t(me)]) - grouping_.begin());
    group_->update().load_state(group_->optimizer(), from.group_state(grouped ? size_t(from.groups[size_t(first)]) : 0));
    group_->optimizer().set_steps_taken(from.optimizer_steps);
  }

  Reached train_until(int64_t done, int64_t until, const StepSink& sink) override {
    const int64_t every = in_.job.parallel.cgp.regroup_every;
    Reached reached{done};
    while (reached.step < until && !reached.stop_signal) {
      const int64_t from = reached.step;
      const int64_t to = every > 0 ? std::min(until, (from / every + 1) * every) : until;
      const PhaseEnd end = run_phase(from, to, sink);
      reached = {end.step, int(end.stop_signal), int(end.stop_rank)};
      if (!end.stop_signal && (end.drifted || (every > 0 && end.step % every == 0)) && end.step < in_.total_steps)
        maybe_regroup(end.step, sink, end.drifted != 0);
    }
    if (server_) in_.model.params_from_host(server_->global());  // rank 0 evaluates the global model
    return reached;
  }

  StepStats evaluate(const Dataset& held_out) override {
    return evaluate_on_rank0(in_.comm, in_.model, held_out, in_.job.train.micro_batch);
  }

  Checkpoint checkpoint(int64_t step, const std::string&) override {
    // Every group's whole optimizer state, gathered to rank 0 in group order.
    std::vector<float> state = group_->update().full_state(group_->optimizer());
    const int groups = group_count_of(grouping_), me = in_.comm.rank();
    const bool group_leader = group_->comm().rank() == 0;
    Checkpoint c;
    if (me == 0) {
      c.model_fingerprint = in_.model.fingerprint();
      c.optimizer = group_->optimizer().name();
      c.step = step;
      c.optimizer_steps = group_->optimizer().steps_taken();
      c.params.assign(server_->global().begin(), server_->global().end());
      c.groups = grouping_;
      c.optimizer_state.resize(state.size() * size_t(groups));
      for (int g = 0; g < groups; ++g) {
        const int leader = int(std::find(grouping_.begin(), grouping_.end(), g) - grouping_.begin());
        std::span<float> dst(c.optimizer_state.data() + size_t(g) * state.size(), state.size());
        if (leader == 0)
          std::copy(state.begin(), state.end(), dst.begin());
        else
          in_.comm.irecv(std::as_writable_bytes(dst), leader, kStateTag).wait();
      }
    } else if (group_leader) {
      in_.comm.isend(std::as_bytes(std::span(state)), 0, kStateTag).wait();
    }
    return c;
  }

 private:
  static constexpr int kStateTag = 910;

  static int group_count_of(const std::vector<int>& g) {
    return g.empty() ? 0 : *std::max_element(g.begin(), g.end()) + 1;
  }

  cgp::SolveOptions solve_options() const { return cgp::solve_options(in_.job); }

  // Rank 0 solves on `speeds`; the result is broadcast by decide().
  std::optional<cgp::Solution> solve_on(const std::vector<double>& speeds) {
    if (in_.comm.rank() != 0) return std::nullopt;
    try {
      return cgp::solve(cluster_.with_speeds(speeds), workload_, solve_options());
    } catch (const Error& e) {
      error_ = e.line();
      return std::nullopt;
    }
  }

  // Broadcasts rank 0's grouping (when `adopt`, or an error) to every rank; returns whether it changed.
  bool decide(const std::optional<cgp::Solution>& solution, bool adopt) {
    Decision d;
    cgp::Grouping next(size_t(in_.comm.size()), 0);
    if (in_.comm.rank() == 0) {
      d.ok = solution.has_value();
      d.adopted = adopt && d.ok;
      std::strncpy(d.error, error_.c_str(), sizeof d.error - 1);
      if (d.adopted) next = solution->grouping;
    }
    in_.comm.broadcast(std::as_writable_bytes(std::span(&d, 1)), 0);
    if (!d.ok) throw JobError("parallel.cgp", std::string(d.error), "see [parallel.cgp] in dptrain-job(5)");
    if (!d.adopted) return false;
    in_.comm.broadcast(std::as_writable_bytes(std::span(next)), 0);
    const bool changed = next != grouping_;
    grouping_ = next;
    return changed;
  }

  // This rank's group (the old one is gone first: its communicator's ranks are being reused).
  void build_group() {
    group_.reset();
    group_ = std::make_unique<GroupReplica>(in_, *server_comm_, grouping_, speeds_, clock_, emulator_);
    grouped_speeds_ = speeds_;
  }

  // How a phase ended, as rank 0's server saw it (broadcast to every rank).
  struct PhaseEnd {
    int64_t step = 0;                  // the last step trained
    int64_t drifted = 0;               // a rank's speed drifted: a regrouping decision is due
    int64_t stop_signal = 0, stop_rank = -1;  // a rank asked the run to stop
  };

  // Trains the steps after `from` up to `to`, or fewer when a rank's speed drifts (a solver's grouping
  // only) or a rank asks the run to stop.
  PhaseEnd run_phase(int64_t from, int64_t to, const StepSink& sink) {
    const CgpSection& c = in_.job.parallel.cgp;
    const double drift = c.groups.empty() ? c.regroup_drift : 0;
    if (server_) server_->begin_phase(grouping_, from, to, grouped_speeds_, drift);
    in_.comm.barrier();  // the server knows the phase before any request
    // Rank 0 passes completed steps on between its local steps (progress while the phase runs).
    std::function<void()> between;
    if (server_) between = [&] { report_steps(server_->take_completed(), sink); };
    // A group alone is the global model: it pushes its update once, after the phase's last chunk.
    const bool alone = group_count_of(grouping_) == 1;
    ExchangeReply chunk = group_->exchange(ExchangeKind::read, 0, 0, 0);
    while (chunk.chunk_count > 0) {
      const double loss = group_->train_chunk(chunk.chunk_begin, chunk.chunk_count, between);
      const ExchangeKind kind = alone && chunk.remaining > 0 ? ExchangeKind::progress : ExchangeKind::update;
      chunk = group_->exchange(kind, chunk.chunk_begin, chunk.chunk_count, loss);
    }
    if (server_) report_steps(server_->end_phase(), sink);
    PhaseEnd end;
    if (server_)
      end = {server_->reached(), !server_->drift_reason().empty(), server_->stop_signal(), server_->stop_rank()};
    in_.comm.broadcast(std::as_writable_bytes(std::span(&end, 1)), 0);
    report_phase(end.step, sink);
    return end;
  }

  static double mean(const std::vector<double>& v) {
    double sum = 0;
    for (double x : v) sum += x;
    return v.empty() ? 0 : sum / double(v.size());
  }

  // After a phase (collective): rank 0 logs every group's times as the model predicts them from the
  // speeds and jitter measured in the phase, beside what the server measured.
  void report_phase(int64_t step, const StepSink& sink) {
    const int me = in_.comm.rank();
    const GroupReplica::Speed mine = group_->take_phase_speed({speeds_[size_t(me)], workload_.compute_cv});
    const std::vector<GroupReplica::Speed> all = in_.comm.allgather_value(mine);
    if (me != 0) return;
    std::vector<double> speeds, cvs;
    for (const GroupReplica::Speed& s : all) speeds.push_back(s.samples_per_s), cvs.push_back(s.cv);
    cgp::Workload w = workload_;
    w.compute_cv = mean(cvs);
    const cgp::Prediction p = cgp::predict(cluster_.with_speeds(speeds), w, grouping_);
    sink.record(json_line(phase_groups_line(step, grouping_, p, server_->tallies(), server_->phase_seconds())));
  }

  // At a regrouping point (every rank, between phases): re-solve on the measured speeds; rebuild the
  // groups when the model predicts more than regroup_gain.
  // `drifted`: a rank's speed drifted in the phase; the speeds are then each rank's latest (the server's
  // median of its last 3 exchanges) rather than its average since the grouping.
  void maybe_regroup(int64_t step, const StepSink& sink, bool drifted) {
    const auto t0 = Clock::now();
    TraceScope traced("regroup decision", {"step", step});
    const double mine = group_->measured_speed(speeds_[size_t(in_.comm.rank())]);
    std::vector<double> measured = in_.comm.allgather_value(mine);
    if (drifted && server_) {
      const std::vector<double> recent = server_->recent_speeds();
      for (size_t r = 0; r < measured.size() && r < recent.size(); ++r)
        if (recent[r] > 0) measured[r] = recent[r];
    }
    in_.comm.broadcast(std::as_writable_bytes(std::span(measured)), 0);
    double drift = 0;
    for (size_t r = 0; r < measured.size(); ++r) drift = std::max(drift, std::abs(measured[r] / grouped_speeds_[r] - 1));
    const std::string reason = drifted && server_ ? server_->drift_reason()
                               : drift > in_.job.parallel.cgp.regroup_drift
                                   ? fmt::format("speeds drifted by {:.0f}%", drift * 100)
                                   : fmt::format("every {} steps", in_.job.parallel.cgp.regroup_every);
    if (!in_.job.parallel.cgp.groups.empty()) return;  // a fixed grouping stays
    std::optional<cgp::Solution> solution = solve_on(measured);
    RegroupLine line;
    line.step = step;
    line.reason = reason;
    bool adopt = false;
    if (solution) {
      const Cluster now = cluster_.with_speeds(measured);
      line.predicted_before = cgp::predict(now, workload_, grouping_).samples_per_s;
      line.predicted_after = solution->prediction.samples_per_s;
      adopt = solution->grouping != grouping_ &&
              line.predicted_after > line.predicted_before * (1 + in_.job.parallel.cgp.regroup_gain);
      line.grouping = cgp::grouping_text(solution->grouping);
    }
    speeds_ = measured;
    const cgp::Grouping old = grouping_;
    if (decide(solution, adopt)) {
      // The optimizer state moves with the ranks: each new group takes its first rank's old group's state.
      const std::vector<float> state = group_->update().full_state(group_->optimizer());
      const int64_t steps_taken = group_->optimizer().steps_taken();
      build_group();
      std::vector<float> taken = state;
      int64_t taken_steps = steps_taken;
      group_->comm().broadcast(std::as_writable_bytes(std::span(taken)), 0);
      group_->comm().broadcast(std::as_writable_bytes(std::span(&taken_steps, 1)), 0);
      group_->update().load_state(group_->optimizer(), taken);
      group_->optimizer().set_steps_taken(taken_steps);
      how_ = fmt::format("regrouped by {} at step {}", name_of(in_.job.parallel.cgp.solver), step);
    } else {
      grouped_speeds_ = measured;
      group_->reset_measurements();
    }
    in_.comm.barrier();
    line.adopted = grouping_ != old;
    line.cost_ms = ms_since(t0);
    traced.set_arg(1, {"adopted", line.adopted ? 1 : 0});
    if (in_.comm.rank() == 0) {
      if (!solution) line.grouping = cgp::grouping_text(grouping_);
      sink.record(json_line(line));
      if (line.adopted)
        sink.note(fmt::format("step {}: regrouped to {} ({}; predicted {:.0f} -> {:.0f} samples/s, {:.1f} ms)", step,
                              line.grouping, reason, line.predicted_before, line.predicted_after, line.cost_ms));
    }
  }

  StrategyInputs in_;
  Cluster cluster_;
  SampleClock clock_;
  SlowdownEmulator emulator_;
  cgp::Workload workload_;
  std::unique_ptr<Communicator> server_comm_;
  std::unique_ptr<ParameterServer> server_;  // rank 0
  cgp::Grouping grouping_;
  std::string how_, error_;
  std::vector<double> speeds_;          // samples/s of every rank, the latest measured
  std::vector<double> grouped_speeds_;  // those the grouping was chosen for
  std::unique_ptr<GroupReplica> group_;  // this rank's group
};

// Before ranks start: the job's fixed grouping or the solver's answer on the described cluster must exist
// (a staleness bound no grouping meets, more groups than ranks). Throws JobError.
void check_cgp_job(const Job& job, const Model& model) {
  if (job.train.on_nonfinite == OnNonfinite::skip)
    throw JobError("[train] on_nonfinite", "\"skip\" undoes a step on every rank, which strategy \"cgp\"'s "
                   "asynchronous groups cannot", "set on_nonfinite = \"stop\", or strategy \"data\" or \"pipeline\"");
  const cgp::Workload w = cgp::job_workload(job, int64_t(model.params().size()),
                                            job.cluster.sample_rate > 0 ? 1 / job.cluster.sample_rate : 1e-3);
  const Cluster cluster = cluster_from_job(job);
  const CgpSection& c = job.parallel.cgp;
  if (!c.groups.empty()) {
    (void)cgp::predict(cluster, w, std::vector<int>(c.groups.begin(), c.groups.end()));
    return;
  }
  // A quick solve: only whether any grouping meets the bound matters here.
  cgp::SolveOptions quick = cgp::solve_options(job);
  quick.solver = c.solver == CgpSolver::exhaustive && cluster.size() > 12 ? CgpSolver::exhaustive : CgpSolver::sorted;
  quick.time_limit_s = 0.2;
  (void)cgp::solve(cluster, w, quick);
}

}  // namespace

StrategyEntry cgp_strategy_entry() {
  return {StrategyKind::cgp, check_cgp_job, [](StrategyInputs in) -> std::unique_ptr<Strategy> {
            return std::make_unique<CgpStrategy>(std::move(in));
          }};
}

}  // namespace dp
