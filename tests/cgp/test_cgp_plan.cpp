// What `dptrain plan` shows for strategy cgp (lib/cgp/plan_report.h) and the job's solve options: the
// job's solver beside sorted, a fixed grouping predicted (and refused against drawn ranks of another
// count), the text's sections and the JSON object's fields.
#define BOOST_TEST_MODULE cgp_plan
#include <boost/test/unit_test.hpp>

#include "lib/cgp/cgp.h"
#include "lib/cgp/plan_report.h"
#include "lib/core/error.h"
#include "lib/job/job_enums_io.h"  // BOOST_TEST prints compared enums by name

using namespace dp;
using namespace dp::cgp;

namespace {

Job cgp_job() {
  Job job;
  job.job.name = "four";
  job.job.seed = 9;
  job.parallel.cgp.solver = dp::CgpSolver::exhaustive;
  job.parallel.cgp.max_staleness = 3;
  job.parallel.cgp.group_count = 0;
  job.parallel.cgp.solver_seconds = 0.25;
  return job;
}

PlanReport report(const Job& job) {
  std::vector<ClusterRank> ranks;
  for (int r = 0; r < 4; ++r) ranks.push_back({r < 2 ? 1.0 : 2.0, 0, "", r / 2, 0});
  Workload w;
  w.param_bytes = 4e6;
  w.global_batch = 64;
  w.sample_seconds = 1e-3;
  w.exchange_every = 2;
  return {job.job.name, Cluster(ranks, Link{100, 1}, Link{10, 10}, Link{1, 50}), w, "mlp 4-4", "[cluster] sample_rate",
          1000000, 9, false, job.parallel.cgp.max_staleness, job.parallel.cgp.group_count, {}, {}, {}};
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

BOOST_AUTO_TEST_CASE(solve_options_are_the_jobs) {
  const SolveOptions o = solve_options(cgp_job());
  BOOST_TEST(o.solver == dp::CgpSolver::exhaustive);
  BOOST_TEST(o.max_staleness == 3.0);
  BOOST_TEST(o.group_count == 0);
  BOOST_TEST(o.seed == 9u);
  BOOST_TEST(o.time_limit_s == 0.25);
}

BOOST_AUTO_TEST_CASE(the_jobs_solver_beside_sorted) {
  const Job job = cgp_job();
  PlanReport r = report(job);
  solve_plan(job, r);
  BOOST_REQUIRE(r.solutions.size() == 2u);
  BOOST_TEST(r.solutions[0].solver == dp::CgpSolver::exhaustive);
  BOOST_TEST(r.solutions[1].solver == dp::CgpSolver::sorted);
  BOOST_TEST(r.solutions[0].prediction.samples_per_s >= r.solutions[1].prediction.samples_per_s);
  BOOST_TEST(!r.fixed.has_value());
  const std::string text = plan_text(r);
  BOOST_TEST(text.starts_with("job four: 4 rank(s), strategy cgp, global batch 64, I-DAT inside groups\n"));
  for (const char* part : {"CGPP: the most samples/s with staleness <= 3, any number of groups", "exhaustive / sorted:",
                           "exhaustive's groups:", "sorted's groups:", "Pareto front of exhaustive"})
    BOOST_TEST(has(text, part), part);
  const std::string json = plan_json(r);
  BOOST_TEST(json.starts_with("{\"job\":\"four\",\"ranks\":4,\"drawn\":false,\"seed\":9,"));
  BOOST_TEST(json.ends_with(",\"fixed\":null}\n"));
  BOOST_TEST(has(json, "\"solutions\":[{\"solver\":\"exhaustive\""));
}

BOOST_AUTO_TEST_CASE(sorted_alone_and_its_failure_noted) {
  Job job = cgp_job();
  job.parallel.cgp.solver = dp::CgpSolver::sorted;
  PlanReport r = report(job);
  solve_plan(job, r);
  BOOST_TEST(r.solutions.size() == 1u);
  BOOST_TEST(has(plan_json(r), "\"ratio_to_sorted\":null"));
  r.sorted_error = "no grouping meets the bound";
  BOOST_TEST(has(plan_text(r), "\nsorted: no grouping meets the bound\n"));
  BOOST_TEST(has(plan_json(r), ",{\"solver\":\"sorted\",\"error\":\"no grouping meets the bound\"}]"));
}

BOOST_AUTO_TEST_CASE(a_fixed_grouping_is_predicted) {
  Job job = cgp_job();
  job.parallel.cgp.groups = {0, 0, 1, 1};
  PlanReport r = report(job);
  solve_plan(job, r);
  BOOST_REQUIRE(r.fixed.has_value());
  BOOST_TEST(r.fixed->groups.size() == 2u);
  BOOST_TEST(has(plan_text(r), "[parallel.cgp] groups: "));
  BOOST_TEST(!has(plan_json(r), "\"fixed\":null"));
}

BOOST_AUTO_TEST_CASE(a_fixed_grouping_against_other_drawn_ranks_names_workers) {
  Job job = cgp_job();
  job.parallel.cgp.groups = {0, 0, 1};
  PlanReport r = report(job);
  try {
    solve_plan(job, r);
    BOOST_FAIL("no error");
  } catch (const UsageError& e) {
    BOOST_TEST(e.where() == "--workers");
    BOOST_TEST(e.message() == "[parallel.cgp] groups names 3 ranks, --workers draws 4");
  }
}
