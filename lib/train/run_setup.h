// What a training run prepares before its first step (the checked inputs, the device, the rank's place
// on its host) and the helpers the loop in trainer.cpp calls: evaluation, the batch-division options.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/kernel_table.h"
#include "lib/balance/balance.h"
#include "lib/comm/communicator.h"
#include "lib/core/backend.h"
#include "lib/data/dataset.h"
#include "lib/job/job.h"
#include "lib/machine/machine.h"
#include "lib/train/checkpoint.h"
#include "lib/train/metrics.h"
#include "lib/train/run_dir.h"
#include "lib/train/run_lock.h"
#include "lib/train/trainer.h"
#include "models/model.h"

namespace dp::train_detail {

// What a run needs before its first step; building it checks every input and writes nothing.
struct Setup {
  RunDir dir;
  DatasetSplits data;
  std::unique_ptr<Model> model;
  std::optional<Checkpoint> resume_from;
  int64_t steps_per_epoch = 0, total_steps = 0;
};

// Collective, before anything is written: rank 0 holds the run folder (run_lock.h) unless the launcher
// that started the ranks holds it for them; a folder another run holds is the same UsageError (naming
// that run) on every rank.
std::optional<RunLock> hold_run_folder(Communicator& comm, const RunDir& dir);
// On --resume of a run whose newest checkpoint is its last step (or past it): the line that says so and
// how to train further; nullopt when there are steps left.
std::optional<std::string> finished_run_note(const Setup& s, const Job& job);

// The device this run trains on; bf16 exists only on the GPU.
Device choose_device(const Job& job);
// Builds the model on `kernels` (the CPU's when the caller only checks the inputs) and checks the rest.
Setup build_setup(const Job& job, const RunOptions& opts, const Kernels& kernels);
// Collective, on --resume: every rank resumes from rank 0's checkpoint (each read its own view of the
// folder, which another host may see otherwise); a rank that chose another reads rank 0's instead.
void agree_on_resume(Communicator& comm, Setup& s, const Job& job);
// `launched` paced as [cluster.emulate] says: with as_described, every pair of ranks linked as [cluster]
// describes (the launch must have [launch] ranks); else link_gbps / link_latency_us; null when none.
std::unique_ptr<Communicator> paced_by_job_links(const Job& job, Communicator& launched);
std::string links_text(const Job& job);  // the emulated network, for the run's first lines ("" when none)
// This rank's index among the ranks on its host (which GPU it drives). Collective.
int local_rank(Communicator& comm);
// The process's peak resident set size in bytes (getrusage).
double peak_resident_bytes();
// [train] threads, or the host's cores divided among its ranks.
int default_threads(const Job& job, const Communicator& comm);
// Whether the emulator may pace compute on `kernels` by the computing thread's CPU time: CPU kernels on
// one compute thread (a pool of BLAS threads, or a GPU, computes elsewhere).
bool paced_by_thread_cpu(const Kernels& kernels);
BalanceOptions balance_options(const Job& job, int world);
std::string shares_text(const std::vector<int64_t>& shares);
// This rank's machine, with the CPU kernels' convolution implementation and threads filled in.
machine::MachineReport this_machine();
// Every rank's machine: one line per kind ("machine: ..." when all ranks agree) and summary.json's array
// of {"ranks": [...], cpu, isa, blas, kernels, threads, convolutions}. Collective.
struct RunMachines {
  std::vector<std::string> lines;
  std::string json;
};
RunMachines gather_machines(Communicator& comm);
// Rank 0 evaluates the whole held-out split (test images, or validation text) in chunks of this many
// samples (the last one shorter).
int64_t evaluation_chunk(const Dataset& held_out);
EvalLine evaluate(Model& model, const Dataset& held_out, int64_t step, int64_t epoch);

}  // namespace dp::train_detail
