// balance_options and shares_text (see job_balance.h).
#include "lib/balance/job_balance.h"

#include <algorithm>
#include <functional>

#include "lib/cluster/cluster.h"

namespace dp {

BalanceOptions balance_options(const Job& job, int world) {
  const BalanceSection& b = job.parallel.balance;
  BalanceOptions o;
  o.mode = b.mode;
  o.every = b.every;
  o.threshold = b.threshold;
  o.initial_speeds = b.speeds;
  // Without speeds of its own, I-DAT starts from the speeds [cluster] describes (when it describes the
  // ranks of this launch and they differ): the first step is already divided as the machines are.
  if (o.initial_speeds.empty() && world == job.launch.ranks) {
    const std::vector<double> described = cluster_from_job(job).speeds();
    if (described.size() == size_t(world) &&
        std::adjacent_find(described.begin(), described.end(), std::not_equal_to<>()) != described.end())
      o.initial_speeds = described;
  }
  if (b.max_share > 0) o.max_share.assign(size_t(world), b.max_share);
  return o;
}

std::string shares_text(const std::vector<int64_t>& shares) {
  std::string t;
  for (int64_t v : shares) {
    if (!t.empty()) t += ' ';
    t += std::to_string(v);
  }
  return t;
}

}  // namespace dp
