// Run preparation for trainer.cpp: inputs checked, the checkpoint to resume agreed, evaluation (see
// run_setup.h).
#include "lib/train/run_setup.h"

#include <fmt/format.h>

#include <algorithm>

#include "lib/core/error.h"
#include "lib/optim/optimizer.h"
#include "lib/train/registry.h"

namespace dp::train_detail {

namespace {

// A strategy whose ranks read only what they hold reads a sharded checkpoint's manifest only (each rank its
// own ranges later); the others read every value.
Checkpoint read_for(const Job& job, const std::string& path) {
  const bool own_ranges = strategy_entry(job.parallel.strategy).reads_own_ranges;
  return own_ranges ? read_checkpoint_manifest(path) : read_checkpoint(path);
}

// A checkpoint the job's model and optimizer can continue from; CheckpointError otherwise.
void check_resumable(const Checkpoint& c, const std::string& path, const Job& job, const Model& model) {
  const auto optimizer = make_optimizer(job.optim, 0);  // its name and state slots
  if (c.model_fingerprint != model.fingerprint() || c.param_count() != model.parameter_count())
    throw CheckpointError(path, fmt::format("checkpoint was written by a different model ({} parameters; "
                                            "the job's model is {})", c.param_count(), model.describe()),
                          "resume with the job that wrote it, or start a new run with --out");
  // Strategy "cgp" keeps every group's state, one after another; a sharded checkpoint one, in its parts.
  const bool state_fits = c.parts.empty() ? c.optimizer_state.size() == c.state_count() * size_t(optimizer->slots()) *
                                                                           size_t(model.parameter_count())
                                          : c.sharded_slots == optimizer->slots();
  if (c.optimizer != optimizer->name() || !state_fits)
    throw CheckpointError(path, fmt::format("checkpoint holds '{}' optimizer state; the job uses '{}'",
                                            c.optimizer, optimizer->name()),
                          "set [optim] name to the optimizer of the checkpointed run");
}

}  // namespace

// Builds the model on `kernels` (the CPU's when the caller only checks the inputs) and checks the rest.
Setup build_setup(const Job& job, const RunOptions& opts, const Kernels& kernels) {
  Setup s;
  s.dir = run_dir_of(job, opts);
  check_run_dir(s.dir, opts.resume, opts.force);
  s.data = load_dataset(job.data, job.job.seed);
  // A strategy that holds parts of the model (pipeline stages) gets it without parameters.
  s.model = make_model(job.model, s.data.train.shape(), job.job.seed, kernels,
                       strategy_entry(job.parallel.strategy).whole_model);
  s.steps_per_epoch = steps_per_epoch(s.data.train.count, job.train.global_batch);
  s.total_steps = job.train.steps > 0 ? job.train.steps : job.train.epochs * s.steps_per_epoch;
  if (opts.resume) {
    const std::vector<std::string> all = list_checkpoints(s.dir.checkpoints());
    if (all.empty())
      throw CheckpointError(s.dir.checkpoints(), "no checkpoint to resume from",
                            "run without --resume to start from scratch");
    // The newest checkpoint must read back whole and verified. A damaged one (a disk error, a copy cut
    // short) is an error that names the newest checkpoint that does verify: continuing from an older
    // one is the user's decision, and the damaged file stays as it is.
    std::optional<Checkpoint> found;
    const std::string* path = &all.back();
    try {
      found = read_for(job, all.back());
    } catch (const CheckpointError& damaged) {
      for (auto it = all.rbegin() + 1; it != all.rend(); ++it) {
        try {
          (void)read_checkpoint_manifest(*it);
        } catch (const CheckpointError&) {
          continue;
        }
        throw CheckpointError(damaged.where(), damaged.message(),
                              fmt::format("the newest checkpoint that verifies is {}: move the damaged one aside to "
                                          "resume from it", *it));
      }
      throw;
    }
    check_resumable(*found, *path, job, *s.model);
    s.resume_from = std::move(found);
  }
  return s;
}

void agree_on_resume(Communicator& comm, Setup& s, const Job& job) {
  if (!s.resume_from || comm.size() == 1) return;
  int64_t step = s.resume_from->step;
  comm.broadcast(std::as_writable_bytes(std::span(&step, 1)), 0);
  const std::string path = checkpoint_path(s.dir.checkpoints(), step);
  if (step != s.resume_from->step) {
    Checkpoint c = read_for(job, path);
    check_resumable(c, path, job, *s.model);
    s.resume_from = std::move(c);
  }
}

}  // namespace dp::train_detail

namespace dp {

StepStats summed_over_ranks(Communicator& comm, const StepStats& mine) {
  if (comm.size() == 1) return mine;
  StepStats total;
  for (const StepStats& s : comm.allgather_value(mine)) {
    total.loss_sum += s.loss_sum;
    total.correct += s.correct;
    total.count += s.count;
  }
  return total;
}

StepStats evaluate_on_rank0(const Communicator& comm, Model& model, const Dataset& held_out, int64_t micro_batch) {
  if (comm.rank() != 0) return {};
  const int64_t chunk = micro_batch > 0 ? std::min(micro_batch, evaluation_chunk(held_out))
                                        : evaluation_chunk(held_out);
  std::vector<uint32_t> idx;
  BatchBuffer buffer;
  StepStats total;
  for (int64_t begin = 0; begin < held_out.count; begin += chunk) {
    const int64_t n = std::min(chunk, held_out.count - begin);
    idx.resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) idx[size_t(i)] = uint32_t(begin + i);
    const StepStats s = model.evaluate(gather_batch(held_out, idx, buffer));
    total.loss_sum += s.loss_sum;
    total.correct += s.correct;
    total.count += s.count;
  }
  return total;
}

}  // namespace dp
