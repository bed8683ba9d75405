// What the sbatch and MPIJob emitters share: checking a request, names Slurm and Kubernetes accept,
// Slurm's time format, the default image.
#include <fmt/format.h>

#include <cctype>
#include <cmath>

#include "lib/core/error.h"
#include "lib/launch/emit.h"

namespace dp {

std::string default_image() { return std::string("localhost/dptrain:") + DPTRAIN_VERSION; }

std::string slurm_job_name(const std::string& name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ? c : '-';
  return out.empty() ? "dptrain" : out;
}

std::string kubernetes_name(const std::string& name) {
  std::string out;
  for (char c : name) {
    const char lower = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const bool keep = (lower >= 'a' && lower <= 'z') || (lower >= '0' && lower <= '9');
    if (keep)
      out += lower;
    else if (!out.empty() && out.back() != '-')
      out += '-';  // '.', '_' and the like become one '-'
  }
  if (out.empty() || !(out[0] >= 'a' && out[0] <= 'z')) out = "dptrain-" + out;
  if (out.size() > 40) out.resize(40);
  while (out.back() == '-') out.pop_back();
  return out;
}

std::string slurm_time(double seconds) {
  const auto total = static_cast<int64_t>(std::ceil(seconds));
  return fmt::format("{}-{:02}:{:02}:{:02}", total / 86400, total % 86400 / 3600, total % 3600 / 60, total % 60);
}

void check_request(const SchedulerRequest& r) {
  auto refuse = [](const char* field, std::string what, std::string hint = {}) {
    throw UsageError(std::string("scheduler request ") + field, std::move(what), std::move(hint));
  };
  if (r.ranks < 1) refuse("ranks", fmt::format("must be at least 1, got {}", r.ranks));
  if (r.nodes < 1) refuse("nodes", fmt::format("must be at least 1, got {}", r.nodes));
  if (r.ranks_per_node < 1) refuse("ranks_per_node", fmt::format("must be at least 1, got {}", r.ranks_per_node));
  if (r.nodes * r.ranks_per_node < r.ranks)
    refuse("nodes", fmt::format("{} nodes of {} ranks hold {} ranks, fewer than the {} asked for", r.nodes,
                                r.ranks_per_node, r.nodes * r.ranks_per_node, r.ranks),
           "give more nodes or more ranks per node");
  if (r.nodes > r.ranks)
    refuse("nodes", fmt::format("{} nodes for {} ranks leaves a node without a rank", r.nodes, r.ranks));
  if (r.cpus_per_rank < 1) refuse("cpus_per_rank", fmt::format("must be at least 1, got {}", r.cpus_per_rank));
  if (r.memory_per_rank_bytes < 0)
    refuse("memory_per_rank_bytes", fmt::format("must be at least 0, got {}", r.memory_per_rank_bytes));
  if (r.gpus_per_rank < 0) refuse("gpus_per_rank", fmt::format("must be at least 0, got {}", r.gpus_per_rank));
  if (!(r.time_limit_s >= 0) || !std::isfinite(r.time_limit_s))
    refuse("time_limit_s", fmt::format("must be a finite number of seconds, at least 0, got {}", r.time_limit_s));
  if (r.job_file.empty()) refuse("job_file", "must not be empty");
  if (r.dptrain.empty() || r.container_dptrain.empty()) refuse("dptrain", "must not be empty");
}

}  // namespace dp
