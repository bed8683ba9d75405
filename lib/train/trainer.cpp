// A training run: the device, the run directory, the progress display and metrics, evaluation and
// checkpoints at their cadence; the steps in between belong to the job's strategy (strategy.h).
#include "lib/train/trainer.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>

#include "kernels/cpu/ops.h"
#include "kernels/kernel_table.h"
#include "lib/comm/collective_queue.h"
#include "lib/core/backend.h"
#include "lib/core/error.h"
#include "lib/core/memory_meter.h"
#include "lib/core/stop_signal.h"
#include "lib/core/trace.h"
#include "lib/data/dataset.h"
#include "lib/train/checkpoint.h"
#include "lib/train/nonfinite.h"
#include "lib/train/pipeline_plan.h"
#include "lib/train/progress.h"
#include "lib/train/run_dir.h"
#include "lib/train/run_setup.h"
#include "lib/train/run_trace.h"
#include "lib/train/strategy.h"
#include "lib/train/watchdog.h"
#include "models/model.h"

namespace dp {
namespace {

using namespace train_detail;

using Clock = std::chrono::steady_clock;

// A run stopped early on a signal after `step` (collective): the checkpoint of that step, when the job
// keeps checkpoints, and stopped.json saying so (rank 0). Returns the checkpoint's path ("" when none).
std::string save_stopped_run(Strategy& strategy, const Job& job, const RunDir& dir, bool leader, int64_t step,
                             const Reached& reached, Progress* progress) {
  std::string path;
  if (job.checkpoint.enabled && step > 0) {
    Checkpoint ckpt = strategy.checkpoint(step);  // collective
    path = checkpoint_path(dir.checkpoints(), step);
    if (leader) {
      check_finite_parameters(ckpt.params, step);
      write_checkpoint(path, ckpt);
      prune_checkpoints(dir.checkpoints(), job.checkpoint.keep);
    }
  }
  if (!leader) return path;
  write_file_atomic(dir.stopped(), stopped_json({reached.stop_signal, reached.stop_rank, step, path}));
  progress->note(fmt::format("dptrain: {} reached rank {}: stopped after step {}; {}", signal_name(reached.stop_signal),
                             reached.stop_rank, step,
                             path.empty() ? std::string("checkpoints are off: nothing to resume from")
                                          : "wrote " + path));
  return path;
}

}  // namespace

RunInputs check_run_inputs(const Job& job, const RunOptions& opts) {
  (void)choose_device(job);
  const Setup s = build_setup(job, opts, cpu_kernels());
  check_run_dir_writable(s.dir);
  if (job.parallel.strategy == "cgp") check_cgp_job(job, *s.model);
  if (job.parallel.strategy == "pipeline") check_pipeline_job(job, *s.model);
  return {finished_run_note(s, job)};
}

RunResult train(const Job& job, Communicator& launched, const RunOptions& opts) {
  const auto wall_start = Clock::now();
  // One run at a time in a folder: held before anything is written (by rank 0, or by our launcher).
  const std::optional<RunLock> folder_lock = hold_run_folder(launched, run_dir_of(job, opts));
  // The timeline (trace.json): this thread is the rank's compute track; threads started below (MRA's
  // communication thread, CGP's server) take their own tracks of the same tracer.
  const std::unique_ptr<Tracer> tracer = make_run_tracer(job, launched);
  const TraceThread traced_thread(tracer.get(), "compute");
  // Under emulated links every message of the run (MRA's thread included) is paced as on a network.
  const std::unique_ptr<Communicator> paced = paced_by_job_links(job, launched);
  Communicator& comm = paced ? *paced : launched;
  const bool leader = comm.rank() == 0;
  const int world = comm.size();
  cpu::set_compute_threads(default_threads(job, comm));

  // On GPUs: one rank per device, gradients summed by NCCL on the devices (a queue behind the kernels).
  const Device device = choose_device(job);
  const Kernels* kernels = &cpu_kernels();
  std::unique_ptr<CollectiveQueue> gpu_queue;
  if (device.kind == "cuda") {
    const int devices = probe_backends().cuda_devices;
    if (comm.local_size() > devices)
      throw JobError("[launch] ranks", fmt::format("{} ranks on host {} share {} GPU(s); GPU training runs one "
                                                   "rank per GPU", comm.local_size(), comm.host(), devices),
                     fmt::format("set ranks to at most {} per host, or device = \"cpu\"", devices));
    use_cuda_device(local_rank(comm), job.train.precision);
    kernels = cuda_kernel_table();
    if (world > 1) gpu_queue = make_nccl_queue(comm);
  }
  Setup s = build_setup(job, opts, *kernels);
  agree_on_resume(comm, s, job);
  RunResult result;
  if (const auto note = finished_run_note(s, job)) {  // --resume of a finished run: nothing changes
    if (leader) std::fprintf(opts.log, "%s\n", note->c_str());
    result.finished_before = true;
    result.first_step = s.resume_from->step + 1;
    result.summary.steps = s.resume_from->step;
    return result;
  }
  const Watchdog watchdog(launched, job.launch.wait_timeout, s.dir.heartbeat());  // no wait blocks forever
  Model& model = *s.model;
  StrategyInputs inputs{job, comm, model, s.data.train, *kernels, std::move(gpu_queue), s.steps_per_epoch,
                        s.total_steps};
  const std::unique_ptr<Strategy> strategy = job.parallel.strategy == "cgp"        ? make_cgp_strategy(std::move(inputs))
                                             : job.parallel.strategy == "pipeline" ? make_pipeline_strategy(std::move(inputs))
                                                                                   : make_data_strategy(std::move(inputs));
  int64_t step = 0;  // steps completed
  if (s.resume_from) {
    strategy->resume(*s.resume_from);
    step = s.resume_from->step;
  }
  const RunMachines machines = gather_machines(comm);
  std::unique_ptr<MetricsLog> metrics;
  std::unique_ptr<Progress> progress;
  if (leader) {
    prepare_run_dir(s.dir, opts.resume, opts.force, step);
    write_file_atomic(s.dir.job(), job_to_toml(job));
    metrics = std::make_unique<MetricsLog>(s.dir.metrics(), wall_start);
    metrics->write(StartLine{job.job.name, job.parallel.strategy, device.kind, world, s.total_steps,
                             s.steps_per_epoch, step + 1, job.train.global_batch, s.data.train.context > 0});
    progress = std::make_unique<Progress>(opts.log, job.log.progress, s.total_steps, job.log.every);
    progress->note(fmt::format("dptrain: {} on {} rank(s), {} thread(s) each, device {}{}; {} steps of {} samples{}",
                               model.describe(), world, cpu::compute_threads(), device.describe(),
                               device.kind == "cuda" ? ", " + job.train.precision + " GEMMs" : std::string(),
                               s.total_steps, job.train.global_batch,
                               step > 0 ? fmt::format("; resuming after step {}", step) : std::string()));
    for (const std::string& line : machines.lines) progress->note(line);
    for (const std::string& line : strategy->describe()) progress->note(line);
    if (s.data.train.context > 0)
      progress->note(fmt::format("text: {} characters of vocabulary, {} train and {} validation windows of {}; "
                                 "character-bigram entropy {:.4f} nats per character",
                                 s.data.train.classes, s.data.train.count, s.data.test.count,
                                 s.data.train.context, s.data.train.bigram_entropy));
  }
  comm.barrier();  // the directory is ready before anyone trains
  if (tracer) tracer->set_origin(agreed_trace_origin(launched));  // one time line for every rank

  const Dataset& train_set = s.data.train;
  const int64_t terms_per_sample = model.targets_per_sample();
  result.first_step = step + 1;
  double train_seconds = 0, last_loss = 0;
  int64_t trained_samples = 0;
  std::optional<EvalLine> last_eval;
  const int64_t stop = opts.stop_after >= 0 ? std::min(opts.stop_after, s.total_steps) : s.total_steps;
  const int64_t eval_every = job.train.eval_every > 0 ? job.train.eval_every : s.steps_per_epoch;
  const int64_t ckpt_every = job.checkpoint.every > 0 ? job.checkpoint.every : s.steps_per_epoch;

  // Rank 0 hears of every step: the losses, metrics.jsonl, the progress display.
  StepSink sink;
  sink.note = [&](const std::string& line) {
    if (leader) progress->note(line);
  };
  sink.regroup = [&](const RegroupLine& line) { metrics->write(line); };
  sink.groups = [&](const PhaseGroupsLine& line) { metrics->write(line); };
  sink.pipeline = [&](const PipelineLine& line) { metrics->write(line); };
  int64_t skipped_steps = 0;
  sink.skipped = [&](int64_t at, double loss) {
    ++skipped_steps;
    if (leader)
      progress->note(fmt::format("step {}: the training loss is {}: step undone on every rank ({} so far; [train] "
                                 "on_nonfinite = \"skip\")", at, loss, skipped_steps));
  };
  sink.step = [&](const StepRecord& r) {
    // Strategies "data" and "pipeline" stop or skip such a step themselves (nonfinite.h); CGP's groups
    // apply their updates before the server hears the loss, so its run stops here (rank 0).
    if (!std::isfinite(r.loss))
      throw NonFiniteError("[train] on_nonfinite", fmt::format("step {}: the training loss is {}; the run stops here, "
                                                               "its newest checkpoint is from before it", r.step, r.loss),
                           "lower [optim] lr (or add warmup_steps)", false);
    train_seconds += r.seconds;
    trained_samples += r.samples;
    last_loss = r.loss;
    result.losses.push_back(r.loss);
    if (!leader) return;
    if (r.step % job.log.every == 0 || r.step == stop || r.log_always)
      for (const TrainLine& line : r.ranks) metrics->write(line);
    progress->step(r.step, r.epoch, r.loss, double(r.samples) / r.seconds, r.seconds);
  };

  while (step < stop) {
    // Train up to the next pause: evaluation and checkpoints happen outside the timed steps.
    auto next = [&](int64_t every) { return (step / every + 1) * every; };
    int64_t until = std::min(stop, next(eval_every));
    if (job.checkpoint.enabled) until = std::min(until, next(ckpt_every));
    const Reached reached = strategy->train_until(step, until, sink);
    step = reached.step;
    if (reached.stop_signal) {  // a rank asked the run to stop: save what it has, and end
      result.stop_signal = reached.stop_signal;
      result.stop_rank = reached.stop_rank;
      result.stop_checkpoint = save_stopped_run(*strategy, job, s.dir, leader, step, reached, progress.get());
      break;
    }
    const int64_t epoch = (step - 1) / s.steps_per_epoch;
    const bool eval_due = step % eval_every == 0, last = step == s.total_steps;
    const bool ckpt_due = job.checkpoint.enabled && (step % ckpt_every == 0 || last);
    if (leader && (eval_due || last)) {
      last_eval = evaluate(strategy->model_to_evaluate(), s.data.test, step, epoch);
      last_eval->train_seconds = train_seconds;
      metrics->write(*last_eval);
      progress->note(train_set.context > 0
                         ? fmt::format("step {} epoch {}: validation loss {:.4f} nats per token, perplexity {:.2f}",
                                       step, epoch, last_eval->test_loss, std::exp(last_eval->test_loss))
                         : fmt::format("step {} epoch {}: test loss {:.4f}, test accuracy {:.4f}", step, epoch,
                                       last_eval->test_loss, last_eval->test_accuracy));
    }
    if (ckpt_due) {
      const TraceScope traced("checkpoint", {"step", step});
      Checkpoint ckpt = strategy->checkpoint(step);  // collective
      if (leader) {
        metrics->flush();
        check_finite_parameters(ckpt.params, step);
        write_checkpoint(checkpoint_path(s.dir.checkpoints(), step), ckpt);
        prune_checkpoints(s.dir.checkpoints(), job.checkpoint.keep);
      }
    }
    const TraceScope waiting("pause: evaluation and checkpoint");
    comm.barrier();  // everyone lines up again after the pause
  }

  if (tracer) {  // collective; over the launched communicator, not paced by emulated links
    const int64_t events = write_run_trace(*tracer, launched, s.dir.trace());
    if (leader)
      progress->note(fmt::format("trace: {} events of steps {}-{} of this invocation on {} rank(s); wrote {}", events,
                                 job.log.trace_first, job.log.trace_first + job.log.trace_steps - 1, world,
                                 s.dir.trace()));
  }

  // Every rank's peak memory (collective): its compute buffers, and its process's resident size.
  const Summary::RankMemory my_memory{double(MemoryMeter::process().peak()), peak_resident_bytes()};
  const std::vector<Summary::RankMemory> memory = world > 1 ? comm.allgather_value(my_memory)
                                                            : std::vector<Summary::RankMemory>{my_memory};
  result.summary.steps = step;
  if (leader) progress->finish();
  if (leader && !result.stop_signal) {
    if (!last_eval) {
      last_eval = evaluate(strategy->model_to_evaluate(), s.data.test, step, step / s.steps_per_epoch);
      last_eval->train_seconds = train_seconds;
    }
    metrics->flush();
    Summary& sum = result.summary;
    sum.test_accuracy = last_eval->test_accuracy;
    sum.test_loss = last_eval->test_loss;
    sum.train_loss = last_loss;
    sum.samples_per_sec = train_seconds > 0 ? double(trained_samples) / train_seconds : 0;
    sum.train_seconds = train_seconds;
    sum.wall_seconds = std::chrono::duration<double>(Clock::now() - wall_start).count();
    sum.ranks = world;
    sum.memory = memory;
    sum.epochs = (step + s.steps_per_epoch - 1) / s.steps_per_epoch;
    sum.steps = step;
    sum.resumed_from_step = result.first_step - 1;
    sum.skipped_steps = skipped_steps;
    sum.parameters = int64_t(model.params().size());
    sum.model = model.describe();
    sum.job_json = job_to_json(job);
    sum.machines_json = machines.json;
    sum.language_model = train_set.context > 0;
    sum.tokens_per_sample = terms_per_sample;
    sum.bigram_entropy = train_set.bigram_entropy;
    write_file_atomic(s.dir.summary(), summary_json(sum));
    progress->note(sum.language_model
                       ? fmt::format("done: validation loss {:.4f} nats per token, perplexity {:.2f} (bigram "
                                     "entropy {:.4f}), {:.0f} tokens/s, {:.1f} s; wrote {}", sum.test_loss,
                                     std::exp(sum.test_loss), sum.bigram_entropy,
                                     sum.samples_per_sec * double(terms_per_sample), sum.wall_seconds,
                                     s.dir.summary())
                       : fmt::format("done: test accuracy {:.4f}, test loss {:.4f}, {:.0f} samples/s, {:.1f} s; "
                                     "wrote {}", sum.test_accuracy, sum.test_loss, sum.samples_per_sec,
                                     sum.wall_seconds, s.dir.summary()));
  }
  return result;
}

}  // namespace dp
