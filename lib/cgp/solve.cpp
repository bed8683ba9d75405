// solve(): checks the options, runs the chosen solver over a Search record, and turns the record into a
// Solution (the best grouping that meets the bound, its prediction, the front) or the error that says why
// there is none.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "lib/cgp/cgp_internal.h"
#include "lib/core/error.h"

namespace dp::cgp {

namespace {

constexpr int kExhaustiveMostRanks = 12;

void check_options(const SolveOptions& o, int ranks) {
  if (!(o.max_staleness >= 0) || !std::isfinite(o.max_staleness))
    throw JobError("parallel.cgp.max_staleness", fmt::format("must be at least 0, got {}", o.max_staleness));
  if (o.group_count < 0)
    throw JobError("parallel.cgp.group_count", fmt::format("must be at least 0, got {}", o.group_count));
  if (o.group_count > ranks)
    throw JobError("parallel.cgp.group_count",
                   fmt::format("{} groups cannot be formed from {} ranks", o.group_count, ranks),
                   "a group holds at least one rank: lower parallel.cgp.group_count, or 0 to let the solver choose");
  if (!(o.time_limit_s > 0) || !std::isfinite(o.time_limit_s))
    throw JobError("parallel.cgp.solver_seconds", fmt::format("must be greater than 0, got {}", o.time_limit_s));
  if (o.solver == CgpSolver::exhaustive && ranks > kExhaustiveMostRanks)
    throw JobError("parallel.cgp.solver",
                   fmt::format("exhaustive scores every grouping: at most {} ranks, the cluster has {}",
                               kExhaustiveMostRanks, ranks),
                   "use aga (up to about 64 ranks) or pls");
}

// `smallest`: the least staleness the solver found with group_count groups (NaN: no search was needed).
[[noreturn]] void no_grouping_meets(const SolveOptions& o, double smallest) {
  const int g = o.group_count;
  const bool searched = std::isfinite(smallest);
  // The job key takes whole numbers: the least one that the grouping found would meet.
  const double enough = searched ? std::ceil(smallest - detail::kStalenessTolerance) : double(g - 1);
  throw JobError("parallel.cgp.max_staleness",
                 searched ? fmt::format("no grouping into {} groups has staleness at most {:g}: the smallest {} "
                                        "found is {:.4g}",
                                        g, o.max_staleness, name_of(o.solver), smallest)
                          : fmt::format("no grouping into {} groups has staleness at most {:g}: any {} groups "
                                        "have at least {}",
                                        g, o.max_staleness, g, g - 1),
                 fmt::format("raise parallel.cgp.max_staleness to at least {:g}, or lower parallel.cgp.group_count "
                             "(0: the solver chooses)",
                             enough));
}

}  // namespace

Solution solve(const Cluster& cluster, const Workload& workload, const SolveOptions& o) {
  Workload w = workload;  // the runtime holds updates at the bound the grouping is chosen for
  w.hold_staleness = o.max_staleness;
  const detail::Topology t = detail::make_topology(cluster, w);
  check_options(o, t.n);
  // G groups have staleness at least G - 1 (the group of the longest cycle counts each other's updates
  // at least once per cycle): a bound below that is unmeetable without a search (holding the updates
  // would keep to it only by running the groups in lockstep).
  if (o.group_count > 0 && o.group_count - 1 > o.max_staleness + detail::kStalenessTolerance)
    no_grouping_meets(o, std::nan(""));
  detail::Search search(t, w, o);
  switch (o.solver) {
    case CgpSolver::exhaustive: detail::solve_exhaustive(search); break;
    case CgpSolver::sorted: detail::solve_sorted(search); break;
    case CgpSolver::aga: detail::solve_aga(search); break;
    case CgpSolver::pls: detail::solve_pls(search); break;
  }
  if (!search.have_best()) no_grouping_meets(o, search.smallest_staleness());
  Solution s;
  s.grouping = normalized(search.best());
  s.prediction = predict(cluster, w, s.grouping);
  s.front = search.archive().front();
  // The search scores without the server's queue below saturation, which predict() plays out: of the
  // front's groupings within the bound, the one predicted fastest with it.
  for (const FrontPoint& f : s.front) {
    if (f.max_staleness > o.max_staleness + detail::kStalenessTolerance) continue;
    const Grouping g = normalized(f.grouping);
    if (g == s.grouping) continue;
    Prediction p = predict(cluster, w, g);
    if (p.samples_per_s > s.prediction.samples_per_s && p.max_staleness <= o.max_staleness + detail::kStalenessTolerance)
      s.grouping = g, s.prediction = std::move(p);
  }
  s.solver = o.solver;
  s.evaluations = search.evaluations();
  s.time_limited = search.time_limited();
  s.seconds = search.seconds();
  return s;
}

Grouping pipeline_groups(const Job& job) {
  const bool given = !job.parallel.cgp.groups.empty();
  Grouping g(job.parallel.cgp.groups.begin(), job.parallel.cgp.groups.end());
  if (!given) {
    const Cluster c = cluster_from_job(job);
    for (int r = 0; r < c.size(); ++r) g.push_back(c.rank(r).node);
  }
  g = normalized(g);
  std::vector<int> sizes(size_t(*std::max_element(g.begin(), g.end()) + 1), 0);
  for (int x : g) ++sizes[size_t(x)];
  for (int s : sizes)
    if (s != sizes[0])
      throw JobError(given ? "[parallel.cgp] groups" : "[cluster] ranks_per_node",
                     fmt::format("groups of {} and {} ranks: every group of strategy \"cgp-pipeline\" runs the same "
                                 "stages on as many ranks", sizes[0], s),
                     "make the groups (or nodes) equal in size");
  return g;
}

}  // namespace dp::cgp
