// restart_while_allowed (restart.h): the launcher's loop of elastic restarts.
#include "apps/dptrain/restart.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "apps/dptrain/auto_strategy.h"
#include "apps/dptrain/launch_self.h"
#include "lib/core/error.h"
#include "lib/core/stop_signal.h"
#include "lib/launch/elastic.h"
#include "lib/launch/slurm.h"
#include "lib/train/checkpoint.h"

namespace dp::app {
namespace {

constexpr double kAnswerSeconds = 10;  // a machine that does not answer its remote shell in this is dropped

std::string why(int status, const Job& job) {
  if (status == 124)
    return fmt::format("no rank made progress for [launch] wait_timeout ({:g} s)", job.launch.wait_timeout);
  if (status > 128 && status - 128 <= 31) return "a process was killed by " + signal_name(status - 128);
  return fmt::format("{} ended with exit status {} (a rank or a machine was lost)",
                     uses_srun(job.launch, this_host()) ? "srun" : "mpirun", status);
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out.flush()) throw RuntimeFailure(path, "cannot write the restart's file", "check the run folder's disk");
}

// The next launch's job on the machines that answer, and the words for what was dropped.
struct NextLaunch {
  Job job;
  std::string machines;  // "node2 does not answer: dropped; on node0, node1"
};

NextLaunch next_launch(const Job& job, const RunDir& dir, int attempt) {
  const LaunchHost host = this_host();
  const bool srun = uses_srun(job.launch, host);  // the allocation's nodes, asked through Slurm
  const std::vector<PlacedHost> hosts = placed_hosts(job.launch, host);
  if (hosts.empty()) return {job, "on this machine again"};
  std::vector<std::string> names;
  for (const PlacedHost& h : hosts) names.push_back(h.host);
  const std::vector<bool> answering =
      hosts_answering(names, kAnswerSeconds, srun ? Probe::slurm_step : Probe::remote_shell);
  std::vector<std::string> dropped, kept;
  for (size_t h = 0; h < hosts.size(); ++h) {
    if (hosts[h].ranks.empty()) continue;  // held no rank
    (answering[h] ? kept : dropped).push_back(hosts[h].host);
  }
  const std::string where = srun ? "the Slurm allocation" : job.launch.hostfile.empty() ? "[launch] hosts"
                                                                                       : job.launch.hostfile;
  if (kept.empty())
    throw RuntimeFailure(where,
                         fmt::format("no machine of the run answers ({} tried for {:g} s)", fmt::join(names, ", "),
                                     kAnswerSeconds),
                         "check the machines and the network, then continue with --resume");
  std::string hostfile;  // under srun the kept nodes go in [launch] hosts, srun's node list
  if (!srun) {
    const std::string folder = dir.root + "/restarts";
    std::filesystem::create_directories(folder);
    hostfile = std::filesystem::absolute(fmt::format("{}/hostfile-{}", folder, attempt)).string();
    write_file(hostfile, kept_hostfile(hosts, answering));
  }
  const std::string said = dropped.empty() ? fmt::format("every machine answers: on {}", fmt::join(kept, ", "))
                                           : fmt::format("{} {} not answer within {:g} s: dropped; on {}",
                                                         fmt::join(dropped, ", "), dropped.size() == 1 ? "does" : "do",
                                                         kAnswerSeconds, fmt::join(kept, ", "));
  NextLaunch next{job_on_kept_hosts(job, hosts, answering, hostfile), said};
  if (srun) next.job.launch.launcher = Launcher::srun;
  return next;
}

}  // namespace

int restart_while_allowed(const Job& job, const RunDir& dir, int status, RunEnd end,
                          const std::vector<std::string>& rank_flags, bool automatic) {
  Job current = job;
  namespace fs = std::filesystem;
  for (int attempt = 1;; ++attempt) {
    if (attempt > job.launch.max_restarts || !restartable(status, fs::exists(dir.stopped()), fs::exists(dir.failed())))
      return end.status;
    const std::string reason = why(status, current);
    NextLaunch next = next_launch(current, dir, attempt);
    std::string chose;
    if (automatic) {  // strategy "auto": chosen again on the ranks left
      Job again = next.job;
      again.parallel.strategy = StrategyKind::automatic;
      const AutoChoice choice = choose_strategy(again);
      record_choice(dir, choice);
      next.job = choice.job;
      chose = "; " + choice.line;
    }
    const auto checkpoint = newest_checkpoint(dir.checkpoints());
    const std::string job_path = fs::absolute(fmt::format("{}/restarts/job-{}.toml", dir.root, attempt)).string();
    fs::create_directories(dir.root + "/restarts");
    write_file(job_path, job_to_toml(next.job));
    std::fprintf(stderr, "dptrain: restart %d of %lld: %s; %s; from %s; ranks %lld -> %lld (job %s)%s\n", attempt,
                 static_cast<long long>(job.launch.max_restarts), reason.c_str(), next.machines.c_str(),
                 checkpoint ? checkpoint->c_str() : "the start (no checkpoint yet)",
                 static_cast<long long>(current.launch.ranks), static_cast<long long>(next.job.launch.ranks),
                 job_path.c_str(), chose.c_str());
    std::error_code ignored;
    for (const std::string& f : {dir.stopped(), dir.heartbeat(), dir.failed()}) fs::remove(f, ignored);
    std::vector<std::string> args{"run", job_path, "--out", dir.root, checkpoint ? "--resume" : "--force"};
    args.insert(args.end(), rank_flags.begin(), rank_flags.end());
    const auto launched = fs::file_time_type::clock::now();
    status = launch_with_args(next.job.launch, args, OnSignal::request_stop);
    end = run_end(dir, status, launched);
    for (const std::string& line : end.lines) std::fprintf(stderr, "dptrain: %s\n", line.c_str());
    current = std::move(next.job);
  }
}

}  // namespace dp::app
