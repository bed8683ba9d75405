// mpirun command construction and process spawning for `dptrain run`.
#include "lib/launch/launcher.h"

#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <thread>

#include "lib/core/error.h"
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
  std::vector<std::string> cmd{launch.mpirun, "-np", std::to_string(launch.ranks)};
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
volatile sig_atomic_t launcher_signal = 0;  // the last termination signal this process was sent

// SIGTERM or SIGHUP sent to this process alone (a scheduler stopping the job, a closed terminal) goes on
// to the launched command, which passes it to the ranks and stops them, so no rank is left running
// when this process returns. Async-signal-safe: kill() only.
void forward_signal(int sig) {
  launcher_signal = sig;
  if (launched_pid > 0) ::kill(pid_t(launched_pid), sig);
}

constexpr int kForwarded[] = {SIGTERM, SIGHUP};
// A scheduler's warning before pre-emption (Slurm's --signal): the ranks do not act on it yet, so this
// process ignores it rather than die of it and leave the ranks behind; the launched command gets the
// default disposition.
constexpr int kIgnored[] = {SIGUSR1, SIGUSR2};

}  // namespace

int run_and_wait(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // The terminal's Ctrl-C reaches mpirun too, which stops the ranks and exits: this process ignores it
  // while waiting so that it can return mpirun's status; the child starts with default handlers.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  for (int sig : kForwarded) sigaddset(&defaults, sig);
  for (int sig : kIgnored) sigaddset(&defaults, sig);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  auto* previous = ::signal(SIGINT, SIG_IGN);
  // Block the forwarded signals until the child's pid is known, so none is lost in between.
  sigset_t forwarded, unblocked;
  sigemptyset(&forwarded);
  for (int sig : kForwarded) sigaddset(&forwarded, sig);
  ::sigprocmask(SIG_BLOCK, &forwarded, &unblocked);
  posix_spawnattr_setsigmask(&attr, &unblocked);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  struct sigaction forward = {}, before[std::size(kForwarded)];
  forward.sa_handler = forward_signal;
  sigemptyset(&forward.sa_mask);
  for (size_t i = 0; i < std::size(kForwarded); ++i) ::sigaction(kForwarded[i], &forward, &before[i]);
  struct sigaction ignore = {}, ignored_before[std::size(kIgnored)];
  ignore.sa_handler = SIG_IGN;
  for (size_t i = 0; i < std::size(kIgnored); ++i) ::sigaction(kIgnored[i], &ignore, &ignored_before[i]);
  auto restore = [&] {
    launched_pid = 0;
    for (size_t i = 0; i < std::size(kForwarded); ++i) ::sigaction(kForwarded[i], &before[i], nullptr);
    for (size_t i = 0; i < std::size(kIgnored); ++i) ::sigaction(kIgnored[i], &ignored_before[i], nullptr);
    ::sigprocmask(SIG_SETMASK, &unblocked, nullptr);
    ::signal(SIGINT, previous);
  };
  pid_t pid = 0;
  launcher_signal = 0;
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
