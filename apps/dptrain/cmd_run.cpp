// `dptrain run JOB.toml`: its options, and the command: outside an MPI job, check the inputs, relaunch
// under mpirun and say how the run ended (lib/train/run_end.h); inside one, train on the world
// communicator.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "apps/dptrain/auto_strategy.h"
#include "apps/dptrain/job_options.h"
#include "apps/dptrain/launch_self.h"
#include "apps/dptrain/restart.h"
#include "lib/comm/communicator.h"
#include "lib/core/error.h"
#include "lib/core/json.h"
#include "lib/launch/elastic.h"
#include "lib/launch/launcher.h"
#include "lib/launch/slurm.h"
#include "lib/train/train.h"
#include "lib/train/watchdog.h"

namespace dp::app {
namespace {

struct RunCommand {
  JobArgs job;
  std::string out_dir;  // --out
  bool resume = false, force = false, dry_run = false, json = false;
};

RunOptions run_options(const RunCommand& cmd) {
  RunOptions o;
  o.out_dir = cmd.out_dir;
  o.resume = cmd.resume;
  o.force = cmd.force;
  o.log = cmd.json ? stderr : stdout;
  return o;
}

// The launcher holds the run folder for its ranks, through every mpirun or srun it starts (run_lock.h).
RunLock hold_for_launch(const RunDir& dir, const LaunchSection& launch) {
  RunLock lock = RunLock::hold(dir.root, fmt::format("the dptrain run launcher (ranks under {})",
                                                     uses_srun(launch, this_host()) ? "srun" : "mpirun"));
  lock.export_to_children();
  return lock;
}

int launch(const RunCommand& cmd, ProcessArgs process) {
  std::vector<std::string> extra;
  Job job = job_as_launched(cmd.job, extra);
  for (const JobWarning& w : job.warnings) std::fprintf(stderr, "dptrain: %s\n", w.line().c_str());
  const RunDir dir = run_dir_of(job, run_options(cmd));
  // A folder another run holds is refused before anything is checked or written; a new folder is made
  // (to hold it) only once the inputs are known to be good.
  std::optional<RunLock> lock;
  if (!cmd.dry_run && std::filesystem::is_directory(dir.root)) lock.emplace(hold_for_launch(dir, job.launch));
  // strategy "auto": the comparison's winner (on --resume, the one this run chose before); the ranks get
  // its overrides after the job's own.
  std::optional<AutoChoice> chosen;
  const bool automatic = job.parallel.strategy == StrategyKind::automatic;
  if (automatic) {
    if (cmd.resume) chosen = recorded_choice(job, dir);
    if (!chosen) chosen = choose_strategy(job);
    job = chosen->job;
    for (const std::string& s : chosen->sets) extra.push_back("--set=" + s);
  }
  const RunInputs inputs = check_run_inputs(job, run_options(cmd));
  if (inputs.finished) {  // --resume of a finished run: say so, change nothing
    std::printf("%s\n", inputs.finished->c_str());
    return 0;
  }
  // Machines that do not answer: one line before any rank starts or a new folder is made.
  if (!cmd.dry_run && !uses_srun(job.launch, this_host())) check_hosts_answer(job.launch, 10);
  if (!cmd.dry_run && !lock) lock.emplace(hold_for_launch(dir, job.launch));
  if (chosen) {
    std::fprintf(cmd.json ? stderr : stdout, "dptrain: %s\n", chosen->line.c_str());
    std::fflush(cmd.json ? stderr : stdout);
    if (!cmd.dry_run) record_choice(dir, *chosen);
  }
  // mpirun gives ranks a pseudo-terminal, so only this process can tell whether output is a terminal.
  if (job.log.progress == ProgressMode::automatic)
    extra.push_back(::isatty(::fileno(cmd.json ? stderr : stdout)) ? "--set=log.progress=bar"
                                                                    : "--set=log.progress=plain");
  if (!cmd.dry_run) {  // what an earlier run left to report on
    std::error_code ignored;
    std::filesystem::remove(dir.stopped(), ignored);
    std::filesystem::remove(dir.heartbeat(), ignored);
    std::filesystem::remove(dir.failed(), ignored);
  }
  const auto launched = std::filesystem::file_time_type::clock::now();
  const int status = relaunch_under_mpirun(job.launch, process, cmd.dry_run, extra, OnSignal::request_stop);
  if (cmd.dry_run) return status;
  const RunEnd end = run_end(dir, status, launched);
  for (const std::string& line : end.lines) std::fprintf(stderr, "dptrain: %s\n", line.c_str());
  std::vector<std::string> rank_flags;  // what a restart's ranks keep of this launch's arguments
  for (const std::string& a : extra)
    if (a.starts_with("--set=log.progress=")) rank_flags.push_back(a);
  if (cmd.json) rank_flags.push_back("--json");
  return restart_while_allowed(job, dir, status, end, rank_flags, automatic);
}

// A rank that ends the run with an error of its own says so in the run folder (failed.json), so that the
// launcher does not restart what would fail again. Best effort: the error line is printed either way.
void report_failure(const Job& job, const RunCommand& cmd, const Communicator& world, const Error& e) {
  const RunDir dir = run_dir_of(job, run_options(cmd));
  if (!std::filesystem::is_directory(dir.root)) return;
  std::ofstream out(dir.failed());
  out << fmt::format("{{\"rank\": {}, \"host\": {}, \"exit_code\": {}, \"error\": {}}}\n", world.rank(),
                     json_quoted(world.host()), e.exit_code(), json_quoted(e.line()));
}

int run_rank(const RunCommand& cmd, ProcessArgs process) {
  // MPI's start is a meeting of every rank: one stopped or cut off meanwhile must not hold the others for
  // good. The job is read first for its wait_timeout (an error in it is reported below, once MPI runs).
  double wait_timeout = 0;
  try {
    wait_timeout = double(load_job(cmd.job.path, cmd.job.overrides).launch.wait_timeout);
  } catch (const Error&) {
  }
  std::optional<WaitGuard> starting(std::in_place, wait_timeout, "MPI's start");
  MpiRuntime mpi(process.argc, process.argv);  // main() installed the stop handlers (stop_signal.h)
  auto world = mpi_world();
  starting.reset();
  std::optional<Job> loaded;
  try {
    const Job& job = loaded.emplace(load_job(cmd.job.path, cmd.job.overrides));
    if (job.parallel.strategy == StrategyKind::automatic)
      throw UsageError(job.source + " [parallel] strategy", "\"auto\" is chosen by dptrain run's launcher before ranks "
                       "start; these ranks were started by another", "start the job with dptrain run (it starts the "
                       "ranks), or name the strategy that dptrain plan JOB --compare picks");
    if (world->rank() == 0 && world->size() != job.launch.ranks)
      std::fprintf(stderr, "dptrain: note: running on %d ranks; the job's [launch] ranks is %lld\n", world->size(),
                   static_cast<long long>(job.launch.ranks));
    const RunResult result = train(job, *world, run_options(cmd));
    if (cmd.json && world->rank() == 0 && !result.stop_signal && !result.finished_before)
      std::printf("%s", summary_json(result.summary).c_str());
    return 0;
  } catch (const Error& e) {
    // Bad input is detected alike on every rank, and so is a non-finite loss that every rank found at
    // the same step: rank 0 reports it and all end normally. Any other failure may be local to one rank:
    // that rank reports and ends the whole job.
    const auto* nonfinite = dynamic_cast<const NonFiniteError*>(&e);
    const bool everywhere = e.exit_code() == 2 || (nonfinite && nonfinite->every_rank());
    if (world->rank() == 0 || !everywhere) {
      std::fprintf(stderr, "dptrain: %s%s\n", world->size() > 1 ? fmt::format("rank {}: ", world->rank()).c_str() : "",
                   e.line().c_str());
      if (loaded && e.exit_code() != 2) report_failure(*loaded, cmd, *world, e);  // bad input changes nothing
    }
    if (!everywhere && world->size() > 1) MpiRuntime::abort(e.exit_code());
    return e.exit_code();
  }
}

int cmd_run(const RunCommand& cmd, ProcessArgs process) {
  if (!cmd.dry_run && inside_mpi_job([](const char* v) { return std::getenv(v); })) return run_rank(cmd, process);
  return launch(cmd, process);
}

}  // namespace

void register_run(CLI::App& app, Invocation& call) {
  auto opt = std::make_shared<RunCommand>();
  auto* cmd = app.add_subcommand("run", "train a job; outside an MPI job, launch itself under mpirun");
  add_job_options(*cmd, opt->job);
  cmd->add_option("--out", opt->out_dir, "output directory (default: [job] output_dir, else runs/<name>)")
      ->type_name("DIR");
  cmd->add_flag("--resume", opt->resume, "continue from the newest checkpoint in the output directory");
  cmd->add_flag("--force", opt->force, "replace an earlier run in the output directory");
  cmd->add_flag("--dry-run", opt->dry_run, "check everything and print the mpirun command, run nothing");
  cmd->add_flag("--json", opt->json, "print summary.json on stdout at the end (progress goes to stderr)");
  cmd->callback([opt, &call] { call.status = cmd_run(*opt, call.process); });
}

}  // namespace dp::app
