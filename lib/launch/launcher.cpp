// mpirun command construction and process spawning for `dptrain run`.
#include "lib/launch/launcher.h"

#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <thread>

#include "lib/core/error.h"
#include "lib/core/stop_signal.h"
#include "lib/launch/slurm.h"

extern char** environ;

namespace dp {

LaunchHost this_host() {
  LaunchHost h;
  h.is_root = ::geteuid() == 0;
  h.cores = int(std::max(1u, std::thread::hardware_concurrency()));
  std::error_code ec;
  h.self_exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  for (char** e = environ; e && *e; ++e) h.environment.emplace_back(*e);
  return h;
}

const char* LaunchHost::getenv(std::string_view name) const {
  for (const auto& entry : environment)
    if (entry.size() > name.size() && entry[name.size()] == '=' && entry.starts_with(name))
      return entry.c_str() + name.size() + 1;
  return nullptr;
}

bool inside_mpi_job(const std::function<const char*(const char*)>& getenv) {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"})
    if (getenv(var)) return true;
  // srun starts a step: SLURM_STEP_ID and SLURM_PROCID are set for each task (not in an salloc shell).
  return getenv("SLURM_STEP_ID") && getenv("SLURM_PROCID");
}

std::vector<std::string> mpirun_command(const LaunchSection& launch, const LaunchHost& host,
                                        const std::vector<std::string>& self_args) {
  // No rank reads standard input, and mpirun, in a process group of its own (run_and_wait), must not:
  // reading a terminal from there would stop it.
  std::vector<std::string> cmd{launch.mpirun, "-np", std::to_string(launch.ranks), "--stdin", "none"};
  if (host.is_root) cmd.push_back("--allow-run-as-root");
  if (!launch.hostfile.empty()) {
    cmd.insert(cmd.end(), {"--hostfile", launch.hostfile});
  } else if (launch.hosts.empty() && slurm_allocation(host)) {
    // Inside a Slurm allocation mpirun finds the nodes and slots itself (and starts its daemons with srun).
  } else if (launch.hosts.empty()) {
    // One machine: keep all traffic local; allow more ranks than cores (and then do not pin them), but
    // not so many that each gets a sliver of a core: that is a mistyped rank count, not a plan.
    if (launch.ranks > kMaxRanksPerCore * int64_t(host.cores))
      throw UsageError("[launch] ranks",
                       fmt::format("{} ranks on this machine's {} core(s): more than {} per core", launch.ranks,
                                   host.cores, kMaxRanksPerCore),
                       "lower [launch] ranks, or name other machines with [launch] hosts or hostfile");
    cmd.insert(cmd.end(), {"--mca", "btl", "self,vader", "--mca", "oob_tcp_if_include", "lo"});
    if (launch.ranks > host.cores) cmd.insert(cmd.end(), {"--oversubscribe", "--bind-to", "none"});
  } else {
    std::string list;
    for (const auto& h : launch.hosts) list += (list.empty() ? "" : ",") + h;
    cmd.insert(cmd.end(), {"--host", list});
  }
  if (!launch.hostfile.empty() || !launch.hosts.empty()) {
    // Across machines: mpirun notices a machine it lost (link down, powered off) within about half of
    // wait_timeout, by TCP keepalive on its daemons' connections (OpenMPI's default: 8 minutes), and ends
    // the job instead of waiting for that machine's daemon forever.
    if (launch.wait_timeout > 0) {
      const int idle = std::max(2, int(launch.wait_timeout / 8)), interval = std::max(1, int(launch.wait_timeout / 16));
      cmd.insert(cmd.end(), {"--mca", "oob_tcp_keepalive_time", std::to_string(idle), "--mca",
                             "oob_tcp_keepalive_intvl", std::to_string(interval), "--mca", "oob_tcp_keepalive_probes",
                             "6"});
    }
  }
  // Forward what ranks need; mpirun forwards nothing to remote hosts by itself.
  for (const char* var : {"PATH", "LD_LIBRARY_PATH", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                          "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"})
    if (host.getenv(var)) cmd.insert(cmd.end(), {"-x", var});
  for (const auto& entry : host.environment)
    if (entry.starts_with("DPTRAIN_") && !entry.starts_with("DPTRAIN_BLAS_REEXEC=") &&  // that pid is ours
        entry.find('=') != std::string::npos)
      cmd.insert(cmd.end(), {"-x", entry.substr(0, entry.find('='))});
  cmd.insert(cmd.end(), launch.mpirun_args.begin(), launch.mpirun_args.end());
  cmd.push_back(host.self_exe);
  cmd.insert(cmd.end(), self_args.begin(), self_args.end());
  return cmd;
}

std::vector<std::string> launch_command(const LaunchSection& launch, const LaunchHost& host,
                                        const std::vector<std::string>& self_args) {
  return uses_srun(launch, host) ? srun_command(launch, host, self_args) : mpirun_command(launch, host, self_args);
}

std::string shell_line(const std::vector<std::string>& argv) {
  std::string line;
  for (const auto& a : argv) {
    if (!line.empty()) line += ' ';
    const bool plain = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                         "0123456789-_./=:,@+%") == std::string::npos;
    if (plain) {
      line += a;
      continue;
    }
    line += '\'';
    for (char c : a) line += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += '\'';
  }
  return line;
}

namespace {

// The launched command (mpirun, srun), for the signal handlers; 0 when none runs.
volatile sig_atomic_t launched_pid = 0;
volatile sig_atomic_t request_stop_mode = 0;  // OnSignal::request_stop
volatile sig_atomic_t launcher_signal = 0;    // the first stop signal this process was sent
std::atomic<long> first_signal_at{0};         // its time (CLOCK_MONOTONIC milliseconds)
volatile sig_atomic_t hard_stopped = 0;       // a second signal went on as SIGTERM

// A stop signal sent to this process (a scheduler, a closed terminal, Ctrl-C: the launched command has
// a process group of its own, so a terminal's signals reach only this process). In forward mode the same
// signal goes on, and the command stops its ranks. In request_stop mode the first goes on as SIGUSR1,
// which mpirun and srun pass to every rank and the ranks take as a request to checkpoint and stop; one
// more, a second or more later (a scheduler may signal every process of the job at once, and that is
// still one request), goes on as SIGTERM, which ends the ranks at once.
void on_stop_signal(int sig) {
  if (launcher_signal == 0) {
    launcher_signal = sig;
    first_signal_at.store(monotonic_ms());
    if (launched_pid > 0) ::kill(pid_t(launched_pid), request_stop_mode ? SIGUSR1 : sig);
    return;
  }
  if (!request_stop_mode || hard_stopped || monotonic_ms() - first_signal_at.load() < kSameRequestMs) return;
  hard_stopped = 1;
  if (launched_pid > 0) ::kill(pid_t(launched_pid), SIGTERM);
}

}  // namespace

int run_and_wait(const std::vector<std::string>& argv, OnSignal on_signal) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // The child starts with default handlers, in a process group of its own (so that a terminal's Ctrl-C
  // comes only here), with the stop signals blocked until its pid is known here, so none is lost.
  sigset_t stop_signals, unblocked;
  sigemptyset(&stop_signals);
  for (int sig : kStopSignals) sigaddset(&stop_signals, sig);
  ::sigprocmask(SIG_BLOCK, &stop_signals, &unblocked);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setsigdefault(&attr, &stop_signals);
  posix_spawnattr_setsigmask(&attr, &unblocked);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
  struct sigaction handler = {}, before[std::size(kStopSignals)];
  handler.sa_handler = on_stop_signal;
  sigemptyset(&handler.sa_mask);
  for (size_t i = 0; i < std::size(kStopSignals); ++i) ::sigaction(kStopSignals[i], &handler, &before[i]);
  auto restore = [&] {
    launched_pid = 0;
    for (size_t i = 0; i < std::size(kStopSignals); ++i) ::sigaction(kStopSignals[i], &before[i], nullptr);
    ::sigprocmask(SIG_SETMASK, &unblocked, nullptr);
  };
  pid_t pid = 0;
  launcher_signal = 0;
  hard_stopped = 0;
  request_stop_mode = on_signal == OnSignal::request_stop;
  const int rc = ::posix_spawnp(&pid, args[0], nullptr, &attr, args.data(), environ);
  posix_spawnattr_destroy(&attr);
  if (rc == 0) launched_pid = pid;
  ::sigprocmask(SIG_SETMASK, &unblocked, nullptr);
  if (rc != 0) {
    restore();
    throw UsageError(argv[0], std::string("cannot start: ") + std::strerror(rc),
                     "install OpenMPI (apt-get install openmpi-bin) or set [launch] mpirun");
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      restore();
      throw RuntimeFailure(argv[0], std::string("waitpid: ") + std::strerror(errno));
    }
  restore();
  // Stopped by a signal sent to this process: the conventional status of that signal.
  if (launcher_signal != 0) return 128 + int(launcher_signal);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace dp
