// The first things a run does with its folder: hold it for this run alone (run_lock.h), and on --resume
// of a run that has already trained every step, say so and change nothing.
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "lib/core/error.h"
#include "lib/train/run_setup.h"

namespace dp::train_detail {
namespace {

// Broadcasts a string from rank 0 (its length, then its bytes).
std::string broadcast_text(Communicator& comm, std::string text) {
  int64_t size = int64_t(text.size());
  comm.broadcast(std::as_writable_bytes(std::span(&size, 1)), 0);
  text.resize(size_t(size));
  if (size > 0) comm.broadcast(std::as_writable_bytes(std::span(text.data(), text.size())), 0);
  return text;
}

// How this process was started, for the lock's holder line.
std::string rank0_holder() {
  if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK"))
    return std::getenv("SLURM_PROCID") && !std::getenv("OMPI_COMM_WORLD_SIZE") ? "rank 0 of dptrain run under srun"
                                                                               : "rank 0 of dptrain run under mpirun";
  return std::getenv("SLURM_PROCID") ? "rank 0 of dptrain run under srun" : "dptrain run";
}

}  // namespace

std::optional<RunLock> hold_run_folder(Communicator& comm, const RunDir& dir) {
  std::optional<RunLock> lock;
  std::string refusal;  // where \n message \n hint, when another run holds the folder
  if (comm.rank() == 0 && !RunLock::held_by_our_launcher(dir.root)) {
    try {
      lock.emplace(RunLock::hold(dir.root, rank0_holder()));
    } catch (const UsageError& e) {
      refusal = e.where() + '\n' + e.message() + '\n' + e.hint();
    }
  }
  if (comm.size() > 1) refusal = broadcast_text(comm, refusal);
  if (!refusal.empty()) {
    const size_t a = refusal.find('\n'), b = refusal.find('\n', a + 1);
    throw UsageError(refusal.substr(0, a), refusal.substr(a + 1, b - a - 1), refusal.substr(b + 1));
  }
  return lock;
}

std::optional<std::string> finished_run_note(const Setup& s, const Job& job) {
  if (!s.resume_from || s.resume_from->step < s.total_steps) return std::nullopt;
  const int64_t done = s.resume_from->step;
  const std::string further =
      job.train.steps > 0
          ? fmt::format("set train.steps above {}", done)
          : fmt::format("raise train.epochs (now {}; e.g. --set train.epochs={})", job.train.epochs,
                        (done + s.steps_per_epoch - 1) / s.steps_per_epoch + job.train.epochs);
  return fmt::format("dptrain: {} holds a finished run: its newest checkpoint is step {} of the job's {}{}; "
                     "nothing to resume, nothing changed. To train further, {} and run with --resume again",
                     s.dir.root, done, s.total_steps,
                     std::filesystem::exists(s.dir.summary()) ? "" : " (it ended before writing summary.json)",
                     further);
}

}  // namespace dp::train_detail

namespace dp {
RunDir run_dir_of(const Job& job, const RunOptions& opts) {
  return RunDir{opts.out_dir.empty() ? job.output_dir() : opts.out_dir};
}
}  // namespace dp
