// Elastic restarts (elastic.h): the launch's machines and ranks, which answer, and the job on the rest.
#include "lib/launch/elastic.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "lib/cluster/cluster.h"
#include "lib/core/error.h"
#include "lib/launch/hostfile.h"
#include "lib/launch/slurm.h"

extern char** environ;

namespace dp {

bool restartable(int status, bool stopped, bool rank_reported) {
  constexpr int kBadInput = 2;
  const bool stop_signal = status > 128 && (status - 128 == SIGINT || status - 128 == SIGTERM ||
                                            status - 128 == SIGHUP || status - 128 == SIGUSR1);
  return status != 0 && status != kBadInput && !stopped && !rank_reported && !stop_signal;
}

namespace {

// By slot: each machine filled before the next (a machine without slots: as many as are left).
std::vector<PlacedHost> placed_by_slot(std::vector<PlacedHost> hosts, int64_t ranks) {
  int next = 0;
  for (PlacedHost& h : hosts)
    while (next < ranks && (h.slots == 0 || int64_t(h.ranks.size()) < h.slots)) h.ranks.push_back(next++);
  return hosts;
}

}  // namespace

std::vector<PlacedHost> placed_hosts(const LaunchSection& launch, const LaunchHost& host) {
  const std::optional<SlurmAllocation> alloc = slurm_allocation(host);
  if (!uses_srun(launch, host) || !launch.hosts.empty() || !alloc) return placed_hosts(launch);
  std::vector<int64_t> slots = alloc->tasks_per_node;
  if (slots.empty()) {  // the allocation's CPUs per node, over each task's
    if (const char* cpus = host.getenv("SLURM_JOB_CPUS_PER_NODE"); cpus && *cpus)
      for (int64_t c : expand_tasks_per_node(cpus, "SLURM_JOB_CPUS_PER_NODE"))
        slots.push_back(std::max<int64_t>(1, c / std::max<int64_t>(1, alloc->cpus_per_task)));
  }
  std::vector<PlacedHost> hosts;
  for (size_t i = 0; i < alloc->node_names.size(); ++i)
    hosts.push_back({alloc->node_names[i], i < slots.size() ? slots[i] : 0, {}});
  return placed_by_slot(std::move(hosts), launch.ranks);
}

std::vector<PlacedHost> placed_hosts(const LaunchSection& launch) {
  std::vector<PlacedHost> hosts;
  if (!launch.hostfile.empty()) {
    for (const HostfileEntry& e : read_hostfile(launch.hostfile)) hosts.push_back({e.host, e.slots, {}});
  } else {
    for (const std::string& h : launch.hosts) {  // "name" (one slot, as mpirun --host counts it) or "name:N"
      const size_t colon = h.rfind(':');
      hosts.push_back(colon == std::string::npos
                          ? PlacedHost{h, 1, {}}
                          : PlacedHost{h.substr(0, colon), std::atoll(h.c_str() + colon + 1), {}});
    }
  }
  return placed_by_slot(std::move(hosts), launch.ranks);
}

void check_slots(const LaunchSection& launch) {
  int64_t slots = 0;
  for (const PlacedHost& h : placed_hosts(launch)) {
    if (h.slots == 0) return;  // a machine's cores: known to mpirun only
    slots += h.slots;
  }
  if (slots == 0 || slots >= launch.ranks) return;
  throw UsageError(launch.hostfile.empty() ? "[launch] hosts" : launch.hostfile,
                   fmt::format("{} slot(s) on the machines named for {} rank(s)", slots, launch.ranks),
                   fmt::format("lower [launch] ranks to {}, or name more machines or slots", slots));
}

namespace {

// The command that asks `host` whether it answers.
std::vector<std::string> probe_command(Probe probe, const std::string& host, double timeout_s) {
  if (probe == Probe::slurm_step)
    return {"srun", "--overlap", "--nodes=1", "--ntasks=1", "--nodelist=" + host, "--quiet", "true"};
  // OpenMPI's remote shell ("ssh : rsh" lists alternatives; the first is the one used here).
  const char* env = std::getenv("OMPI_MCA_plm_rsh_agent");
  std::string agent = env && *env ? env : "ssh";
  agent = agent.substr(0, agent.find(':'));
  std::vector<std::string> base;
  std::istringstream words(agent);
  for (std::string w; words >> w;) base.push_back(w);
  if (base.empty()) base.push_back("ssh");
  if (base.front() == "ssh" || base.front().ends_with("/ssh"))
    base.insert(base.begin() + 1, {"-o", "BatchMode=yes", "-o", fmt::format("ConnectTimeout={}", int(timeout_s))});
  base.insert(base.end(), {host, "true"});
  return base;
}

}  // namespace

std::vector<bool> hosts_answering(const std::vector<std::string>& hosts, double timeout_s, Probe probe) {
  posix_spawn_file_actions_t quiet;
  posix_spawn_file_actions_init(&quiet);
  for (int fd : {0, 1, 2}) posix_spawn_file_actions_addopen(&quiet, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0);
  std::vector<pid_t> pids(hosts.size(), 0);
  for (size_t i = 0; i < hosts.size(); ++i) {
    std::vector<std::string> argv = probe_command(probe, hosts[i], timeout_s);
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    if (::posix_spawnp(&pids[i], args[0], &quiet, nullptr, args.data(), environ) != 0) pids[i] = 0;
  }
  posix_spawn_file_actions_destroy(&quiet);
  std::vector<bool> answers(hosts.size(), false);
  std::vector<bool> done(hosts.size(), false);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (size_t left = hosts.size(); left > 0;) {
    left = 0;
    for (size_t i = 0; i < hosts.size(); ++i) {
      if (done[i] || pids[i] == 0) continue;
      int status = 0;
      if (::waitpid(pids[i], &status, WNOHANG) == pids[i]) {
        done[i] = true;
        answers[i] = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      } else {
        ++left;
      }
    }
    if (left == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      for (size_t i = 0; i < hosts.size(); ++i)
        if (!done[i] && pids[i] > 0) ::kill(pids[i], SIGKILL), ::waitpid(pids[i], nullptr, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return answers;
}

void check_hosts_answer(const LaunchSection& launch, double timeout_s) {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  std::vector<std::string> asked;
  for (const PlacedHost& h : placed_hosts(launch))
    if (!h.ranks.empty() && h.host != "localhost" && h.host != "127.0.0.1" && h.host != name)
      asked.push_back(h.host);
  const std::vector<bool> answers = hosts_answering(asked, timeout_s);
  std::vector<std::string> silent;
  for (size_t i = 0; i < asked.size(); ++i)
    if (!answers[i]) silent.push_back(asked[i]);
  if (silent.empty()) return;
  throw UsageError(launch.hostfile.empty() ? "[launch] hosts" : launch.hostfile,
                   fmt::format("{} {} not answer through the remote shell within {:g} s", fmt::join(silent, ", "),
                               silent.size() == 1 ? "does" : "do", timeout_s),
                   "check the name, that the machine is up and that ssh to it works without a password, or "
                   "remove it");
}

namespace {

template <typename T>
std::vector<T> kept_of(const std::vector<T>& per_rank, const std::vector<int>& kept) {
  if (per_rank.empty()) return {};
  std::vector<T> out;
  for (int r : kept) out.push_back(per_rank[size_t(r)]);
  return out;
}

bool describes_cluster(const ClusterSection& c) {
  return !c.speeds.empty() || !c.memory_gb.empty() || !c.kinds.empty() || c.ranks_per_node > 0 ||
         !c.node_sizes.empty() || !c.links.gbps.empty() || c.nodes_per_rack > 0 || !c.file.empty();
}

// The described cluster's kept ranks: per-rank speeds and memory, nodes, and every link as a matrix.
ClusterSection kept_cluster(const Job& job, const std::vector<int>& kept) {
  const Cluster c = cluster_from_job(job);
  ClusterSection out;
  out.sample_rate = job.cluster.sample_rate;
  out.emulate = job.cluster.emulate;
  bool memory_known = true;
  int node = -1;
  for (int r : kept) {
    out.speeds.push_back(c.rank(r).speed);
    out.memory_gb.push_back(c.rank(r).memory_gb);
    memory_known = memory_known && c.rank(r).memory_gb > 0;
    if (c.rank(r).node != node) out.node_sizes.push_back(0), node = c.rank(r).node;
    ++out.node_sizes.back();
  }
  if (!memory_known) out.memory_gb.clear();
  for (int a : kept)
    for (int b : kept) {  // the diagonal is ignored; a rank's link to itself is its node's
      const Link l = c.link(a, b);
      out.links.gbps.push_back(l.gbps);
      out.links.latency_us.push_back(l.latency_us);
    }
  return out;
}

}  // namespace

Job job_on_kept_hosts(const Job& job, const std::vector<PlacedHost>& hosts, const std::vector<bool>& answering,
                      const std::string& hostfile) {
  std::vector<int> kept;
  for (size_t h = 0; h < hosts.size(); ++h)
    if (answering[h]) kept.insert(kept.end(), hosts[h].ranks.begin(), hosts[h].ranks.end());
  Job out = job;
  out.launch.ranks = int64_t(kept.size());
  out.launch.hosts.clear();
  out.launch.hostfile = hostfile;
  if (hostfile.empty())
    for (size_t h = 0; h < hosts.size(); ++h)
      if (answering[h] && !hosts[h].ranks.empty())
        out.launch.hosts.push_back(fmt::format("{}:{}", hosts[h].host, hosts[h].ranks.size()));
  if (describes_cluster(job.cluster)) out.cluster = kept_cluster(job, kept);
  EmulateSection& e = out.cluster.emulate;
  e.slowdown = kept_of(job.cluster.emulate.slowdown, kept);
  if (e.memory_gb.size() > 1) e.memory_gb = kept_of(job.cluster.emulate.memory_gb, kept);
  int64_t fluctuating = -1;
  for (size_t i = 0; i < kept.size(); ++i)
    if (kept[i] == job.cluster.emulate.fluctuate_rank) fluctuating = int64_t(i);
  e.fluctuate_rank = fluctuating;
  out.parallel.balance.speeds = kept_of(job.parallel.balance.speeds, kept);
  out.parallel.cgp.groups.clear();
  out.parallel.pipeline.stages.clear();
  return out;
}

std::string kept_hostfile(const std::vector<PlacedHost>& hosts, const std::vector<bool>& answering) {
  std::string text = "# the hosts that still answered at a restart (dptrain run, [launch] max_restarts)\n";
  for (size_t h = 0; h < hosts.size(); ++h)
    if (answering[h]) text += hosts[h].slots > 0 ? fmt::format("{} slots={}\n", hosts[h].host, hosts[h].slots)
                                                 : hosts[h].host + "\n";
  return text;
}

}  // namespace dp
