// `dptrain run JOB.toml`: outside an MPI job, check the inputs and relaunch under mpirun; inside one,
// train on the world communicator.
#include <fmt/format.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

#include "apps/dptrain/commands.h"
#include "lib/comm/communicator.h"
#include "lib/core/error.h"
#include "lib/core/stop_signal.h"
#include "lib/launch/launcher.h"
#include "lib/launch/slurm.h"
#include "lib/monitor/json_value.h"
#include "lib/train/checkpoint.h"
#include "lib/train/run_dir.h"
#include "lib/train/run_lock.h"
#include "lib/train/trainer.h"
#include "lib/train/watchdog.h"

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

// A JSON file the ranks wrote into the run directory, or nothing when it is absent or unreadable (it only
// adds detail to the launcher's report).
std::optional<monitor::JsonValue> read_run_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    return monitor::JsonValue::parse(text, path);
  } catch (const Error&) {
    return std::nullopt;
  }
}

// What stopped.json in `dir` says, when the ranks wrote it (they stopped on a signal and saved).
std::optional<StoppedRun> read_stopped(const RunDir& dir) {
  const auto v = read_run_json(dir.stopped());
  if (!v) return std::nullopt;
  return StoppedRun{int(v->number("signal", 0)), int(v->number("rank", -1)), int64_t(v->number("step", 0)),
                    v->text("checkpoint")};
}

// What every rank was doing at its last heartbeat (heartbeat.json, watchdog.h), "" when unknown.
std::string last_heartbeats(const RunDir& dir) {
  const auto v = read_run_json(dir.heartbeat());
  const monitor::JsonValue* ranks = v ? v->find("ranks") : nullptr;
  if (!ranks || !ranks->is_array()) return {};
  std::string out;
  for (const monitor::JsonValue& r : ranks->items())
    out += fmt::format("{}rank {} ({}) in '{}'{}", out.empty() ? "" : "; ", r.number("rank", -1), r.text("host"),
                       r.text("activity"), r.number("silent_s", 0) > 2
                                               ? fmt::format(", silent for {:.0f} s", r.number("silent_s", 0))
                                               : std::string());
  return out;
}

// After the ranks ended: when they stopped on a signal (sent here, or to a rank), the conventional status
// of that signal and one line saying where to continue from; after any other unfinished end (a rank
// failed, mpirun was stopped hard) the same line with how it ended (mpirun's own message above names
// the rank and its host). `status`: mpirun's, or 128 + the signal sent to this process.
int report_end(const RunCommand& cmd, const Job& job, int status, std::filesystem::file_time_type launched) {
  const RunDir dir = run_dir_of(job, run_options(cmd));
  const std::optional<StoppedRun> stopped = read_stopped(dir);
  if (status == 0 && !stopped) return 0;  // finished
  // A stop signal that came after the last step: the ranks finished the run (this launch wrote its
  // summary) before the request could take effect.
  std::error_code ec;
  if (!stopped && status > 128 && is_stop_signal(status - 128) &&
      std::filesystem::last_write_time(dir.summary(), ec) >= launched && !ec) {
    std::fprintf(stderr, "dptrain: %s came after the last step: the run finished; wrote %s\n",
                 signal_name(status - 128).c_str(), dir.summary().c_str());
    return 0;
  }
  if (stopped && status == 0) status = 128 + stopped->signal;  // a rank was signalled
  const auto newest = newest_checkpoint(dir.checkpoints());
  const std::string resume = fmt::format("continue with --resume --out {}", dir.root);
  if (stopped) {
    const std::string sent = signal_name(status > 128 ? status - 128 : stopped->signal);
    std::fprintf(stderr, "dptrain: the run stopped on %s after step %lld; %s\n", sent.c_str(),
                 static_cast<long long>(stopped->step),
                 !stopped->checkpoint.empty()
                     ? fmt::format("it wrote {}: {}", stopped->checkpoint, resume).c_str()
                     : newest ? fmt::format("checkpoints are off; the newest is {}: {}", *newest, resume).c_str()
                              : "checkpoints are off: run it again from the start");
    return status;
  }
  const std::string how = status == Watchdog::kExitStatus
                              ? "ended: it made no progress for [launch] wait_timeout (exit status 124)"
                          : status > 128 && status - 128 <= 31
                              ? (is_stop_signal(status - 128)
                                     ? "stopped by " + signal_name(status - 128)
                                     : fmt::format("ended: a process was killed by {}", signal_name(status - 128)))
                              : fmt::format("failed (exit status {})", status);
  if (const std::string doing = last_heartbeats(dir); !doing.empty())
    std::fprintf(stderr, "dptrain: at the last heartbeat: %s\n", doing.c_str());
  std::fprintf(stderr, "dptrain: the run %s; %s\n", how.c_str(),
               newest ? fmt::format("its newest checkpoint is {}: {}", *newest, resume).c_str()
                      : "it wrote no checkpoint: run it again from the start");
  return status;
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
  const Job job = job_as_launched(cmd.job_path, cmd.overrides, extra);
  for (const JobWarning& w : job.warnings) std::fprintf(stderr, "dptrain: %s\n", w.line().c_str());
  const RunDir dir = run_dir_of(job, run_options(cmd));
  // A folder another run holds is refused before anything is checked or written; a new folder is made
  // (to hold it) only once the inputs are known to be good.
  std::optional<RunLock> lock;
  if (!cmd.dry_run && std::filesystem::is_directory(dir.root)) lock.emplace(hold_for_launch(dir, job.launch));
  const RunInputs inputs = check_run_inputs(job, run_options(cmd));
  if (inputs.finished) {  // --resume of a finished run: say so, change nothing
    std::printf("%s\n", inputs.finished->c_str());
    return 0;
  }
  if (!cmd.dry_run && !lock) lock.emplace(hold_for_launch(dir, job.launch));
  // mpirun gives ranks a pseudo-terminal, so only this process can tell whether output is a terminal.
  if (job.log.progress == "auto")
    extra.push_back(::isatty(::fileno(cmd.json ? stderr : stdout)) ? "--set=log.progress=bar"
                                                                    : "--set=log.progress=plain");
  if (!cmd.dry_run) {  // what an earlier run left to report on
    std::error_code ignored;
    std::filesystem::remove(dir.stopped(), ignored);
    std::filesystem::remove(dir.heartbeat(), ignored);
  }
  const auto launched = std::filesystem::file_time_type::clock::now();
  const int status = relaunch_under_mpirun(job.launch, process, cmd.dry_run, extra, OnSignal::request_stop);
  return cmd.dry_run ? status : report_end(cmd, job, status, launched);
}

int run_rank(const RunCommand& cmd, ProcessArgs process) {
  MpiRuntime mpi(process.argc, process.argv);  // main() installed the stop handlers (stop_signal.h)
  auto world = mpi_world();
  try {
    const Job job = load_job(cmd.job_path, cmd.overrides);
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
    if (world->rank() == 0 || !everywhere)
      std::fprintf(stderr, "dptrain: %s%s\n", world->size() > 1 ? fmt::format("rank {}: ", world->rank()).c_str() : "",
                   e.line().c_str());
    if (!everywhere && world->size() > 1) MpiRuntime::abort(e.exit_code());
    return e.exit_code();
  }
}

}  // namespace

int cmd_run(const RunCommand& cmd, ProcessArgs process) {
  if (!cmd.dry_run && inside_mpi_job([](const char* v) { return std::getenv(v); })) return run_rank(cmd, process);
  return launch(cmd, process);
}

}  // namespace dp::app
