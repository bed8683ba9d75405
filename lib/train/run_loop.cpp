// A run's loop between its setup and its summary (see run_loop.h).
#include "lib/train/run_loop.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "kernels/cpu/ops.h"
#include "lib/core/memory_meter.h"
#include "lib/core/stop_signal.h"
#include "lib/train/checkpoint.h"
#include "lib/train/registry.h"
#include "lib/train/run_dir.h"
#include "lib/train/run_trace.h"
#include "lib/train/step/nonfinite.h"

namespace dp {
namespace {

// Rank 0 heard of every step (StepSink): its losses, on every rank. Collective.
void share_losses(Communicator& comm, std::vector<double>& losses) {
  if (comm.size() == 1) return;
  int64_t count = int64_t(losses.size());
  comm.broadcast(std::as_writable_bytes(std::span(&count, 1)), 0);
  losses.resize(size_t(count));
  comm.broadcast(std::as_writable_bytes(std::span(losses)), 0);
}

// The checkpoint after `step` (collective), written by rank 0 beside the newest `keep`. Its path.
std::string save_checkpoint(Strategy& strategy, const Job& job, const RunDir& dir, bool leader, int64_t step) {
  const std::string path = checkpoint_path(dir.checkpoints(), step);
  Checkpoint ckpt = strategy.checkpoint(step, path);  // collective; parts written by their ranks
  if (leader) {
    check_finite_parameters(ckpt.params, step);  // a part's writer checked its own
    write_checkpoint(path, ckpt);
    prune_checkpoints(dir.checkpoints(), job.checkpoint.keep);
  }
  return path;
}

}  // namespace

RunLoop::RunLoop(const Job& job, Communicator& comm, const RunOptions& opts, train_detail::Setup& setup,
                 const DeviceChoice& device, std::unique_ptr<CollectiveQueue> gpu_queue, Clock::time_point wall_start)
    : job_(job), comm_(comm), opts_(opts), s_(setup), device_(device), wall_start_(wall_start) {
  StrategyInputs inputs{job, comm, *s_.model, s_.data.train, *device.kernels, std::move(gpu_queue),
                        s_.steps_per_epoch, s_.total_steps, s_.resume_from ? &*s_.resume_from : nullptr};
  strategy_ = strategy_entry(job.parallel.strategy).make(std::move(inputs));
  if (s_.resume_from) {
    strategy_->resume(*s_.resume_from);
    step_ = s_.resume_from->step;
  }
  result_.first_step = step_ + 1;
  stop_ = opts.stop_after >= 0 ? std::min(opts.stop_after, s_.total_steps) : s_.total_steps;
  eval_every_ = job.train.eval_every > 0 ? job.train.eval_every : s_.steps_per_epoch;
  ckpt_every_ = job.checkpoint.every > 0 ? job.checkpoint.every : s_.steps_per_epoch;
}

void RunLoop::open() {
  const RunMachines machines = gather_machines(comm_);  // collective
  machines_json_ = machines.json;
  if (comm_.rank() == 0) {
    const Dataset& train = s_.data.train;
    prepare_run_dir(s_.dir, opts_.resume, opts_.force, step_);
    write_file_atomic(s_.dir.job(), job_to_toml(job_));
    metrics_ = std::make_unique<MetricsLog>(s_.dir.metrics(), wall_start_);
    metrics_->write(StartLine{job_.job.name, name_of(job_.parallel.strategy), device_name(device_.device.kind),
                              comm_.size(), s_.total_steps, s_.steps_per_epoch, step_ + 1, job_.train.global_batch,
                              train.context > 0});
    progress_ = std::make_unique<Progress>(opts_.log, job_.log.progress, s_.total_steps, job_.log.every);
    const Device& device = device_.device;
    progress_->note(fmt::format("dptrain: {} on {} rank(s), {} thread(s) each, device {}{}; {} steps of {} samples{}",
                                s_.model->describe(), comm_.size(), cpu::compute_threads(), device.describe(),
                                device.kind == DeviceKind::cuda ? ", " + name_of(job_.train.precision) + " GEMMs"
                                                                : std::string(),
                                s_.total_steps, job_.train.global_batch,
                                step_ > 0 ? fmt::format("; resuming after step {}", step_) : std::string()));
    for (const std::string& line : machines.lines) progress_->note(line);
    for (const std::string& line : strategy_->describe()) progress_->note(line);
    if (train.context > 0)
      progress_->note(fmt::format("text: {} characters of vocabulary, {} train and {} validation windows of {}; "
                                  "character-bigram entropy {:.4f} nats per character",
                                  train.classes, train.count, s_.data.test.count, train.context, train.bigram_entropy));
  }
  comm_.barrier();  // the directory is ready before anyone trains
}

// Rank 0 hears of every step: the losses, metrics.jsonl, the progress display.
StepSink RunLoop::rank0_sink() {
  StepSink sink;
  sink.note = [this](const std::string& line) { progress_->note(line); };
  sink.record = [this](const std::string& json_object) { metrics_->write_record(json_object); };
  sink.skipped = [this](int64_t at, double loss) {
    ++skipped_steps_;
    progress_->note(fmt::format("step {}: the training loss is {}: step undone on every rank ({} so far; [train] "
                                "on_nonfinite = \"skip\")", at, loss, skipped_steps_));
  };
  sink.step = [this](const StepRecord& r) {
    train_seconds_ += r.seconds;
    trained_samples_ += r.samples;
    last_loss_ = r.loss;
    result_.losses.push_back(r.loss);
    if (r.step % job_.log.every == 0 || r.step == stop_)
      for (const TrainLine& line : r.ranks) metrics_->write(line);
    progress_->step(r.step, r.epoch, r.loss, double(r.samples) / r.seconds, r.seconds);
  };
  return sink;
}

void RunLoop::train_all() {
  const StepSink sink = rank0_sink();
  while (step_ < stop_) {
    // Train up to the next pause: evaluation and checkpoints happen outside the timed steps.
    auto next = [this](int64_t every) { return (step_ / every + 1) * every; };
    int64_t until = std::min(stop_, next(eval_every_));
    if (job_.checkpoint.enabled) until = std::min(until, next(ckpt_every_));
    const Reached reached = strategy_->train_until(step_, until, sink);
    step_ = reached.step;
    if (reached.stop_signal) {  // a rank asked the run to stop: save what it has, and end
      result_.stop_signal = reached.stop_signal;
      result_.stop_rank = reached.stop_rank;
      if (job_.checkpoint.enabled && step_ > 0)
        result_.stop_checkpoint = save_checkpoint(*strategy_, job_, s_.dir, comm_.rank() == 0, step_);
      if (comm_.rank() == 0) note_stopped();
      break;
    }
    pause_after(step_);
  }
}

void RunLoop::note_stopped() {
  const std::string& path = result_.stop_checkpoint;
  write_file_atomic(s_.dir.stopped(), stopped_json({result_.stop_signal, result_.stop_rank, step_, path}));
  progress_->note(fmt::format("dptrain: {} reached rank {}: stopped after step {}; {}", signal_name(result_.stop_signal),
                              result_.stop_rank, step_,
                              path.empty() ? std::string("checkpoints are off: nothing to resume from")
                                           : "wrote " + path));
}

void RunLoop::pause_after(int64_t step) {
  const bool last = step == s_.total_steps;
  if (step % eval_every_ == 0 || last) evaluate_at(step, (step - 1) / s_.steps_per_epoch);  // collective
  if (comm_.rank() == 0 && (step % eval_every_ == 0 || last)) {
    metrics_->write(*last_eval_);
    const EvalLine& e = *last_eval_;
    progress_->note(s_.data.train.context > 0
                        ? fmt::format("step {} epoch {}: validation loss {:.4f} nats per token, perplexity {:.2f}",
                                      step, e.epoch, e.test_loss, std::exp(e.test_loss))
                        : fmt::format("step {} epoch {}: test loss {:.4f}, test accuracy {:.4f}", step, e.epoch,
                                      e.test_loss, e.test_accuracy));
  }
  if (job_.checkpoint.enabled && (step % ckpt_every_ == 0 || last)) {
    const TraceScope traced("checkpoint", {"step", step});
    if (comm_.rank() == 0) metrics_->flush();  // the lines up to the checkpoint are on disk first
    (void)save_checkpoint(*strategy_, job_, s_.dir, comm_.rank() == 0, step);
  }
  const TraceScope waiting("pause: evaluation and checkpoint");
  comm_.barrier();  // everyone lines up again after the pause
}

// Collective: the held-out split evaluated on the run's parameters after `step` (the line on rank 0).
void RunLoop::evaluate_at(int64_t step, int64_t epoch) {
  const TraceScope traced("evaluate", {"step", step});
  const StepStats t = strategy_->evaluate(s_.data.test);
  evaluated_step_ = step;
  if (comm_.rank() != 0) return;
  last_eval_ = EvalLine{step, epoch, t.loss_sum / double(t.count), double(t.correct) / double(t.count)};
  last_eval_->train_seconds = train_seconds_;
}

void RunLoop::write_trace(Tracer& tracer, Communicator& launched) {
  const int64_t events = write_run_trace(tracer, launched, s_.dir.trace());
  if (comm_.rank() == 0)
    progress_->note(fmt::format("trace: {} events of steps {}-{} of this invocation on {} rank(s); wrote {}", events,
                                job_.log.trace_first, job_.log.trace_first + job_.log.trace_steps - 1, comm_.size(),
                                s_.dir.trace()));
}

RunResult RunLoop::finish() {
  share_losses(comm_, result_.losses);
  // The summary's test figures are of the last step (pause_after evaluates it; a run that ended
  // elsewhere is evaluated here, by every rank, before the memory peaks are read).
  if (!result_.stop_signal && evaluated_step_ != step_) evaluate_at(step_, step_ / s_.steps_per_epoch);
  // Every rank's peak memory (collective): its compute buffers, and its process's resident size.
  const Summary::RankMemory mine{double(MemoryMeter::process().peak()), peak_resident_bytes()};
  const std::vector<Summary::RankMemory> memory = comm_.size() > 1 ? comm_.allgather_value(mine)
                                                                   : std::vector<Summary::RankMemory>{mine};
  result_.summary.steps = step_;
  if (comm_.rank() == 0) progress_->finish();
  if (comm_.rank() == 0 && !result_.stop_signal) write_summary(memory);
  return result_;
}

void RunLoop::write_summary(const std::vector<Summary::RankMemory>& memory) {
  metrics_->flush();
  const Dataset& train = s_.data.train;
  const int64_t tokens_per_sample = s_.model->targets_per_sample();
  Summary& sum = result_.summary;
  sum.test_accuracy = last_eval_->test_accuracy;
  sum.test_loss = last_eval_->test_loss;
  sum.train_loss = last_loss_;
  sum.samples_per_sec = train_seconds_ > 0 ? double(trained_samples_) / train_seconds_ : 0;
  sum.train_seconds = train_seconds_;
  sum.wall_seconds = std::chrono::duration<double>(Clock::now() - wall_start_).count();
  sum.ranks = comm_.size();
  sum.memory = memory;
  sum.epochs = (step_ + s_.steps_per_epoch - 1) / s_.steps_per_epoch;
  sum.steps = step_;
  sum.resumed_from_step = result_.first_step - 1;
  sum.skipped_steps = skipped_steps_;
  sum.parameters = s_.model->parameter_count();
  sum.model = s_.model->describe();
  sum.job_json = job_to_json(job_);
  sum.machines_json = machines_json_;
  sum.language_model = train.context > 0;
  sum.tokens_per_sample = tokens_per_sample;
  sum.bigram_entropy = train.bigram_entropy;
  write_file_atomic(s_.dir.summary(), summary_json(sum));
  progress_->note(sum.language_model
                      ? fmt::format("done: validation loss {:.4f} nats per token, perplexity {:.2f} (bigram "
                                    "entropy {:.4f}), {:.0f} tokens/s, {:.1f} s; wrote {}", sum.test_loss,
                                    std::exp(sum.test_loss), sum.bigram_entropy,
                                    sum.samples_per_sec * double(tokens_per_sample), sum.wall_seconds,
                                    s_.dir.summary())
                      : fmt::format("done: test accuracy {:.4f}, test loss {:.4f}, {:.0f} samples/s, {:.1f} s; "
                                    "wrote {}", sum.test_accuracy, sum.test_loss, sum.samples_per_sec,
                                    sum.wall_seconds, s_.dir.summary()));
}

}  // namespace dp
