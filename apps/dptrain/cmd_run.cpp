// `dptrain run JOB.toml`: outside an MPI job, check the inputs and relaunch under mpirun; inside one,
// train on the world communicator.
#include <fmt/format.h>

#include <unistd.h>

#include <cstdio>

#include "apps/dptrain/commands.h"
#include "lib/comm/communicator.h"
#include "lib/core/error.h"
#include "lib/launch/launcher.h"
#include "lib/train/checkpoint.h"
#include "lib/train/run_dir.h"
#include "lib/train/trainer.h"

namespace dp::app {
namespace {

RunOptions run_options(const RunCommand& cmd) {
  RunOptions o;
  o.out_dir = cmd.out_dir;
  o.resume = cmd.resume;
  o.force = cmd.force;
  o.log = cmd.json ? stderr : stdout;
  return o;
}

// After the ranks ended without finishing (a rank failed, mpirun was stopped): one line with how it
// ended and where to continue from (mpirun's own message above names the rank and its host).
void report_stopped_run(const RunCommand& cmd, const Job& job, int status) {
  const RunDir dir{cmd.out_dir.empty() ? job.output_dir() : cmd.out_dir};
  const std::string how = status == 143 ? "stopped by SIGTERM"
                          : status == 129 ? "stopped by SIGHUP"
                          : status > 128  ? fmt::format("ended: a process was killed by signal {}", status - 128)
                                          : fmt::format("failed (exit status {})", status);
  const auto newest = newest_checkpoint(dir.checkpoints());
  std::fprintf(stderr, "dptrain: the run %s; %s\n", how.c_str(),
               newest ? fmt::format("its newest checkpoint is {}: continue with --resume --out {}", *newest,
                                    dir.root).c_str()
                      : "it wrote no checkpoint: run it again from the start");
}

int launch(const RunCommand& cmd, ProcessArgs process) {
  std::vector<std::string> extra;
  const Job job = job_as_launched(cmd.job_path, cmd.overrides, extra);
  check_run_inputs(job, run_options(cmd));
  // mpirun gives ranks a pseudo-terminal, so only this process can tell whether output is a terminal.
  if (job.log.progress == "auto")
    extra.push_back(::isatty(::fileno(cmd.json ? stderr : stdout)) ? "--set=log.progress=bar"
                                                                    : "--set=log.progress=plain");
  const int status = relaunch_under_mpirun(job.launch, process, cmd.dry_run, extra);
  if (status != 0 && !cmd.dry_run) report_stopped_run(cmd, job, status);
  return status;
}

int run_rank(const RunCommand& cmd, ProcessArgs process) {
  MpiRuntime mpi(process.argc, process.argv);
  auto world = mpi_world();
  try {
    const Job job = load_job(cmd.job_path, cmd.overrides);
    if (world->rank() == 0 && world->size() != job.launch.ranks)
      std::fprintf(stderr, "dptrain: note: running on %d ranks; the job's [launch] ranks is %lld\n", world->size(),
                   static_cast<long long>(job.launch.ranks));
    const RunResult result = train(job, *world, run_options(cmd));
    if (cmd.json && world->rank() == 0) std::printf("%s", summary_json(result.summary).c_str());
    return 0;
  } catch (const Error& e) {
    // Bad input is detected alike on every rank: rank 0 reports it and all end normally. Any other
    // failure may be local to one rank: that rank reports and ends the whole job.
    const bool input = e.exit_code() == 2;
    if (world->rank() == 0 || !input)
      std::fprintf(stderr, "dptrain: %s%s\n", world->size() > 1 ? fmt::format("rank {}: ", world->rank()).c_str() : "",
                   e.line().c_str());
    if (!input && world->size() > 1) MpiRuntime::abort(e.exit_code());
    return e.exit_code();
  }
}

}  // namespace

int cmd_run(const RunCommand& cmd, ProcessArgs process) {
  if (!cmd.dry_run && inside_mpi_job([](const char* v) { return std::getenv(v); })) return run_rank(cmd, process);
  return launch(cmd, process);
}

}  // namespace dp::app
