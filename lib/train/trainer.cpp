// The data-parallel training loop.
#include "lib/train/trainer.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>

#include "kernels/cpu/ops.h"
#include "kernels/kernel_table.h"
#include "lib/balance/balance.h"
#include "lib/balance/emulate.h"
#include "lib/comm/collective_queue.h"
#include "lib/core/backend.h"
#include "lib/core/error.h"
#include "lib/data/dataset.h"
#include "lib/train/checkpoint.h"
#include "lib/train/optimizer.h"
#include "lib/train/progress.h"
#include "lib/train/run_setup.h"
#include "lib/train/step_update.h"
#include "lib/train/run_dir.h"
#include "models/model.h"

namespace dp {
namespace {

using namespace train_detail;

using Clock = std::chrono::steady_clock;

// What each rank tells the others after every step, in one allgather: its loss sum (summed in rank
// order), and its share and times (for I-DAT's division and for metrics.jsonl).
struct RankRecord {
  double loss_sum;
  StepTimes times;
};

}  // namespace

void check_run_inputs(const Job& job, const RunOptions& opts) {
  (void)choose_device(job);
  (void)build_setup(job, opts, cpu_kernels());
}

RunResult train(const Job& job, Communicator& launched, const RunOptions& opts) {
  const auto wall_start = Clock::now();
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

  Model& model = *s.model;
  StepUpdate update(job, comm, model, std::move(gpu_queue));
  const auto optimizer = make_optimizer(job.optim, update.state_count(), *kernels);
  Optimizer& opt = *optimizer;
  int64_t step = 0;  // steps completed
  if (s.resume_from) {
    model.params_from_host(s.resume_from->params);
    update.load_state(opt, s.resume_from->optimizer_state);
    opt.set_steps_taken(s.resume_from->optimizer_steps);
    step = s.resume_from->step;
  }
  const RunMachines machines = gather_machines(comm);
  std::unique_ptr<MetricsLog> metrics;
  std::unique_ptr<Progress> progress;
  if (leader) {
    prepare_run_dir(s.dir, opts.resume, opts.force, step);
    write_file_atomic(s.dir.job(), job_to_toml(job));
    metrics = std::make_unique<MetricsLog>(s.dir.metrics());
    progress = std::make_unique<Progress>(opts.log, job.log.progress, s.total_steps, job.log.every);
    progress->note(fmt::format("dptrain: {} on {} rank(s), {} thread(s) each, device {}{}; {} steps of {} samples{}",
                               model.describe(), world, cpu::compute_threads(), device.describe(),
                               device.kind == "cuda" ? ", " + job.train.precision + " GEMMs" : std::string(),
                               s.total_steps, job.train.global_batch,
                               step > 0 ? fmt::format("; resuming after step {}", step) : std::string()));
    for (const std::string& line : machines.lines) progress->note(line);
    const std::string links = links_text(job);
    progress->note("gradients: " + update.describe() + (links.empty() ? "" : "; " + links));
    progress->note(fmt::format("batch division: {}; first step's shares: {}",
                               job.parallel.balance.mode == "idat"
                                   ? fmt::format("I-DAT (measured speeds, every {} step(s), threshold {:g})",
                                                 job.parallel.balance.every, job.parallel.balance.threshold)
                                   : std::string("equal"),
                               shares_text(Balancer(balance_options(job, world), world).shares(
                                   std::min(job.train.global_batch, s.data.train.count)))));
    if (s.data.train.context > 0)
      progress->note(fmt::format("text: {} characters of vocabulary, {} train and {} validation windows of {}; "
                                 "character-bigram entropy {:.4f} nats per character",
                                 s.data.train.classes, s.data.train.count, s.data.test.count,
                                 s.data.train.context, s.data.train.bigram_entropy));
  }
  comm.barrier();  // the directory is ready before anyone trains

  const Dataset& train_set = s.data.train;
  const int64_t terms_per_sample = model.targets_per_sample();
  Balancer balancer(balance_options(job, world), world);
  const bool idat = job.parallel.balance.mode == "idat";
  SlowdownEmulator emulator(job.cluster.emulate, comm.rank(), job.job.seed);
  BatchBuffer buffer;
  std::vector<uint32_t> permutation;
  int64_t permutation_epoch = -1;

  RunResult result;
  result.first_step = step + 1;
  double train_seconds = 0, last_loss = 0;
  int64_t trained_samples = 0;
  std::optional<EvalLine> last_eval;
  const int64_t stop = opts.stop_after >= 0 ? std::min(opts.stop_after, s.total_steps) : s.total_steps;

  auto step_start = Clock::now();  // a step's time runs from the end of the last step (or pause)
  while (step < stop) {
    const int64_t epoch = step / s.steps_per_epoch, in_epoch = step % s.steps_per_epoch;
    if (epoch != permutation_epoch) {
      permutation = epoch_permutation(train_set.count, job.job.seed, epoch);
      permutation_epoch = epoch;
    }
    const int64_t batch = step_batch_size(train_set.count, job.train.global_batch, in_epoch);
    const std::vector<int64_t> shares = balancer.shares(batch);
    const auto mine = rank_indices(permutation, job.train.global_batch, in_epoch, shares, comm.rank());

    // Compute: gather, forward, backward (under MRA, finished buckets are already being summed and
    // applied meanwhile). Gradients come out pre-divided by the global batch's loss terms.
    const double lr = learning_rate(job.optim, step, s.total_steps);
    update.begin(opt, lr);
    const auto t0 = Clock::now();
    const double terms = double(batch * terms_per_sample);
    const StepStats local = model.forward_backward(gather_batch(train_set, mine, buffer), float(1.0 / terms));
    kernels->synchronize();  // GPU work is asynchronous: time the backward, not its launch
    // Compute excludes the forward's waits for parameters still arriving (MRA's overlap_forward).
    const double forward_wait_s = update.forward_wait_ms() / 1000;
    emulator.delay(step, std::chrono::duration<double>(Clock::now() - t0).count() - forward_wait_s);
    const auto t1 = Clock::now();
    // A rank's own time this step, what I-DAT balances: its computation and its host work since the last
    // step (dividing the batch, the leader's logging of that step), less the forward's waits for parameters.
    const double compute_s = std::chrono::duration<double>(t1 - step_start).count() - forward_wait_s;
    // Sum the gradients and update (the rest of it, under MRA), then one exchange of every rank's loss,
    // share and times; the step's time includes it.
    const SyncTimes sync = update.finish();
    const StepTimes times{compute_s * 1000, sync.wait_ms, sync.comm_ms + forward_wait_s * 1000, sync.update_ms,
                          int64_t(mine.size())};
    const RankRecord record{local.loss_sum, times};
    const std::vector<RankRecord> all = world > 1 ? comm.allgather_value(record) : std::vector<RankRecord>{record};
    double loss_sum = 0;
    for (const RankRecord& r : all) loss_sum += r.loss_sum;
    if (idat) {  // every rank knows every rank's compute speed, so all divide the next batch alike
      std::vector<int64_t> batches;
      std::vector<double> seconds;
      for (const RankRecord& r : all) {
        batches.push_back(r.times.local_batch);
        seconds.push_back(r.times.compute_ms / 1000);
      }
      if (balancer.observe(step, batches, seconds) && leader)
        progress->note(fmt::format("step {}: I-DAT divides the batch as {}", step + 1,
                                   shares_text(balancer.shares(job.train.global_batch))));
    }
    const auto t4 = Clock::now();
    ++step;

    const double step_seconds = std::chrono::duration<double>(t4 - step_start).count();
    step_start = t4;  // the leader's logging below belongs to the next step
    train_seconds += step_seconds;
    trained_samples += batch;
    last_loss = loss_sum / terms;
    result.losses.push_back(last_loss);
    const bool epoch_end = step % s.steps_per_epoch == 0;
    if (leader && (step % job.log.every == 0 || step == stop))
      for (int r = 0; r < world; ++r)
        metrics->write(TrainLine{step, epoch, r, last_loss, lr, double(batch) / step_seconds, all[size_t(r)].times});
    if (leader) progress->step(step, epoch, last_loss, double(batch) / step_seconds, step_seconds);

    // Pauses outside the timed steps: evaluation and checkpoints, then everyone lines up again.
    const bool eval_due = job.train.eval_every > 0 ? step % job.train.eval_every == 0 : epoch_end;
    const bool ckpt_due = job.checkpoint.enabled &&
                          (job.checkpoint.every > 0 ? step % job.checkpoint.every == 0 : epoch_end);
    const bool last = step == s.total_steps;
    if (eval_due || ckpt_due || last) update.settle();  // every parameter final
    if (leader && (eval_due || last)) {
      last_eval = evaluate(model, s.data.test, step, epoch);
      metrics->write(*last_eval);
      progress->note(train_set.context > 0
                         ? fmt::format("step {} epoch {}: validation loss {:.4f} nats per token", step, epoch,
                                       last_eval->test_loss)
                         : fmt::format("step {} epoch {}: test loss {:.4f}, test accuracy {:.4f}", step, epoch,
                                       last_eval->test_loss, last_eval->test_accuracy));
    }
    if (job.checkpoint.enabled && (ckpt_due || last)) {
      std::vector<float> state = update.full_state(opt);  // collective: sharded state comes together
      if (leader) {
        metrics->flush();
        write_checkpoint(checkpoint_path(s.dir.checkpoints(), step),
                         {model.fingerprint(), opt.name(), step, opt.steps_taken(), model.params_to_host(),
                          std::move(state)});
        prune_checkpoints(s.dir.checkpoints(), job.checkpoint.keep);
      }
    }
    if (eval_due || ckpt_due || last) {
      comm.barrier();
      step_start = Clock::now();  // pauses are not steps
    }
  }

  update.settle();
  if (leader) {
    progress->finish();
    if (!last_eval) last_eval = evaluate(model, s.data.test, step, step / s.steps_per_epoch);
    metrics->flush();
    Summary& sum = result.summary;
    sum.test_accuracy = last_eval->test_accuracy;
    sum.test_loss = last_eval->test_loss;
    sum.train_loss = last_loss;
    sum.samples_per_sec = train_seconds > 0 ? double(trained_samples) / train_seconds : 0;
    sum.train_seconds = train_seconds;
    sum.wall_seconds = std::chrono::duration<double>(Clock::now() - wall_start).count();
    sum.ranks = world;
    sum.epochs = (step + s.steps_per_epoch - 1) / s.steps_per_epoch;
    sum.steps = step;
    sum.resumed_from_step = result.first_step - 1;
    sum.parameters = int64_t(model.params().size());
    sum.model = model.describe();
    sum.job_json = job_to_json(job);
    sum.machines_json = machines.json;
    sum.language_model = train_set.context > 0;
    sum.tokens_per_sample = terms_per_sample;
    sum.bigram_entropy = train_set.bigram_entropy;
    write_file_atomic(s.dir.summary(), summary_json(sum));
    progress->note(sum.language_model
                       ? fmt::format("done: validation loss {:.4f} nats per token (bigram entropy {:.4f}), "
                                     "{:.0f} tokens/s, {:.1f} s; wrote {}", sum.test_loss, sum.bigram_entropy,
                                     sum.samples_per_sec * double(terms_per_sample), sum.wall_seconds,
                                     s.dir.summary())
                       : fmt::format("done: test accuracy {:.4f}, test loss {:.4f}, {:.0f} samples/s, {:.1f} s; "
                                     "wrote {}", sum.test_accuracy, sum.test_loss, sum.samples_per_sec,
                                     sum.wall_seconds, s.dir.summary()));
  }
  return result;
}

}  // namespace dp
