// Slurm allocation detection and the srun command (see slurm.h).
#include "lib/launch/slurm.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <string_view>

#include "lib/core/error.h"

namespace dp {
namespace {

// A positive count from the environment; 0 when unset. SLURM_JOB_NUM_NODES and SLURM_NTASKS are plain
// numbers; a value like "2(x3)" (SLURM_TASKS_PER_NODE's form) is not expected here and is refused.
int64_t count(const LaunchHost& host, const char* name) {
  const char* v = host.getenv(name);
  if (!v || !*v) return 0;
  const std::string_view text(v);
  int64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < 1)
    throw UsageError(name, fmt::format("expected a positive whole number from Slurm, got '{}'", text),
                     "unset it, or run inside a proper allocation (salloc, sbatch)");
  return n;
}

UsageError malformed(const std::string& what, std::string_view text, const char* form) {
  return UsageError(what, fmt::format("cannot read '{}' as a Slurm {}", text, form),
                    "unset it, or run inside a proper allocation (salloc, sbatch)");
}

// Splits at the commas outside brackets.
std::vector<std::string_view> top_level_items(std::string_view text) {
  std::vector<std::string_view> items;
  int depth = 0;
  size_t begin = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || (text[i] == ',' && depth == 0)) {
      if (i > begin) items.push_back(text.substr(begin, i - begin));
      begin = i + 1;
    } else if (text[i] == '[') {
      ++depth;
    } else if (text[i] == ']') {
      --depth;
    }
  }
  return items;
}

bool parse_number(std::string_view text, int64_t& n) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size() && n >= 0;
}

// One item of a host list, its bracket groups expanded left to right ("r[1-2]n[3,5]": r1n3 r1n5 r2n3 r2n5).
bool expand_item(std::string_view item, std::vector<std::string>& out) {
  const size_t open = item.find('[');
  if (open == std::string_view::npos) {
    if (item.find(']') != std::string_view::npos) return false;
    out.emplace_back(item);
    return true;
  }
  const size_t close = item.find(']', open);
  if (close == std::string_view::npos) return false;
  std::vector<std::string> rest;
  if (!expand_item(item.substr(close + 1), rest)) return false;
  const std::string_view prefix = item.substr(0, open);
  for (std::string_view range : top_level_items(item.substr(open + 1, close - open - 1))) {
    const size_t dash = range.find('-');
    const std::string_view lo_text = range.substr(0, dash);
    const std::string_view hi_text = dash == std::string_view::npos ? lo_text : range.substr(dash + 1);
    int64_t lo = 0, hi = 0;
    if (!parse_number(lo_text, lo) || !parse_number(hi_text, hi) || hi < lo || hi - lo > 100000) return false;
    for (int64_t k = lo; k <= hi; ++k)
      for (const std::string& suffix : rest)
        out.push_back(fmt::format("{}{:0{}}{}", prefix, k, lo_text.size(), suffix));
  }
  return true;
}

}  // namespace

std::vector<std::string> expand_hostlist(std::string_view list, const std::string& what) {
  std::vector<std::string> names;
  for (std::string_view item : top_level_items(list))
    if (!expand_item(item, names)) throw malformed(what, list, "host list (name[0-3,7],other)");
  return names;
}

std::vector<int64_t> expand_tasks_per_node(std::string_view counts, const std::string& what) {
  std::vector<int64_t> out;
  for (std::string_view item : top_level_items(counts)) {
    const size_t times = item.find("(x");
    int64_t n = 0, repeat = 1;
    const bool ok = times == std::string_view::npos
                        ? parse_number(item, n)
                        : item.back() == ')' && parse_number(item.substr(0, times), n) &&
                              parse_number(item.substr(times + 2, item.size() - times - 3), repeat);
    if (!ok || n < 1 || repeat < 1 || repeat > 100000) throw malformed(what, counts, "task count list (2(x3),1)");
    out.insert(out.end(), size_t(repeat), n);
  }
  return out;
}

std::optional<SlurmAllocation> slurm_allocation(const LaunchHost& host) {
  const char* id = host.getenv("SLURM_JOB_ID");
  if (!id) id = host.getenv("SLURM_JOBID");  // the older name
  if (!id || !*id) return std::nullopt;
  if (inside_mpi_job([&host](const char* v) { return host.getenv(v); })) return std::nullopt;
  SlurmAllocation a;
  a.job_id = id;
  a.tasks = count(host, "SLURM_NTASKS");
  if (!a.tasks) a.tasks = count(host, "SLURM_NPROCS");
  a.nodes = count(host, "SLURM_JOB_NUM_NODES");
  if (!a.nodes) a.nodes = count(host, "SLURM_NNODES");
  a.cpus_per_task = count(host, "SLURM_CPUS_PER_TASK");
  const char* nodes = host.getenv("SLURM_JOB_NODELIST");
  if (!nodes) nodes = host.getenv("SLURM_NODELIST");
  if (nodes && *nodes) a.node_names = expand_hostlist(nodes, "SLURM_JOB_NODELIST");
  if (const char* tasks = host.getenv("SLURM_TASKS_PER_NODE"); tasks && *tasks)
    a.tasks_per_node = expand_tasks_per_node(tasks, "SLURM_TASKS_PER_NODE");
  return a;
}

bool uses_srun(const LaunchSection& launch, const LaunchHost& host) {
  if (launch.launcher == Launcher::srun) return true;
  if (launch.launcher != Launcher::automatic || !launch.hosts.empty() || !launch.hostfile.empty()) return false;
  return slurm_allocation(host).has_value();
}

int64_t launch_ranks(const LaunchSection& launch, const LaunchHost& host) {
  const auto alloc = slurm_allocation(host);
  // Machines named by the job are not the allocation's: its size does not apply.
  if (!alloc || alloc->tasks == 0 || !launch.hosts.empty() || !launch.hostfile.empty()) return launch.ranks;
  if (!launch.ranks_given) return alloc->tasks;
  if (launch.ranks > alloc->tasks)
    throw UsageError("launch.ranks",
                     fmt::format("asks for {} ranks, but Slurm allocation {} has {} tasks", launch.ranks,
                                 alloc->job_id, alloc->tasks),
                     fmt::format("allocate at least {} tasks (sbatch/salloc --ntasks={}), or leave launch.ranks "
                                 "out to take the allocation's",
                                 launch.ranks, launch.ranks));
  return launch.ranks;
}

std::vector<std::string> srun_command(const LaunchSection& launch, const LaunchHost& host,
                                      const std::vector<std::string>& self_args) {
  // Standard input from /dev/null: no rank reads it, and srun, in a process group of its own
  // (run_and_wait), must not read a terminal.
  std::vector<std::string> cmd{"srun", "--mpi=pmix", fmt::format("--ntasks={}", launch.ranks),
                               "--kill-on-bad-exit=1", "--input=none"};
  if (const auto alloc = slurm_allocation(host); alloc && alloc->cpus_per_task > 0)
    cmd.push_back(fmt::format("--cpus-per-task={}", alloc->cpus_per_task));
  if (!launch.hosts.empty()) {
    std::string names;
    std::vector<std::string> slots;
    for (const std::string& h : launch.hosts) {
      const size_t colon = h.rfind(':');
      names += (names.empty() ? "" : ",") + h.substr(0, colon);
      slots.push_back(colon == std::string::npos ? "1" : h.substr(colon + 1));
    }
    cmd.insert(cmd.end(), {"--nodelist=" + names, fmt::format("--nodes={}", launch.hosts.size()), "--overlap"});
    if (std::all_of(slots.begin(), slots.end(), [&](const std::string& s) { return s == slots.front(); }))
      cmd.push_back("--ntasks-per-node=" + slots.front());
  }
  cmd.push_back(host.self_exe);
  cmd.insert(cmd.end(), self_args.begin(), self_args.end());
  return cmd;
}

}  // namespace dp
