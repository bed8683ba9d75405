// What `dptrain plan` shows for a pipeline (lib/pipeline/plan_report.h): the header, the comparison of
// the plans with the verdict, a stage table per plan, and the JSON object with every plan.
#define BOOST_TEST_MODULE pipeline_plan_report
#include <boost/test/unit_test.hpp>

#include <random>

#include "lib/pipeline/plan_report.h"
#include "tests/pipeline/instances.h"

using namespace dp::pipeline;

namespace {

PlanReport report(bool with_given) {
  std::mt19937_64 rng{3};
  const Workload w = testing::random_workload(5, rng, 8, {1, 2, 4, 8});
  const dp::Cluster c = testing::random_cluster(3, w, rng, 100.0);
  PlanReport r;
  r.job = "five";
  r.profile_source = "layers.toml";
  r.blocks = w.blocks.size();
  r.profile_batch = 8;
  r.global_batch = w.global_batch;
  r.ranks = c.size();
  r.cluster = c.describe();
  r.planning_s = 0.125;
  r.how = "the planner's (exact)";
  r.planned = plan_pipeline(w, c);
  r.naive = naive_plan(w, c);
  r.one_stage = data_parallel_plan(w, c);
  if (with_given) r.given = finish_plan(w, c, parse_stages("0-1,2-4", w, c, 2, "--stages"));
  return r;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

BOOST_AUTO_TEST_CASE(text_compares_then_tables) {
  const PlanReport r = report(true);
  const std::string text = plan_text(r);
  BOOST_TEST(text.starts_with("job five: pipeline of 5 blocks from layers.toml (a chain), times for minibatches of 8 "
                              "samples; global batch 8\ncluster: "));
  BOOST_TEST(has(text, "\n1F1B with a flush per mini-batch; plan: the planner's (exact), 0.125 s\n"));
  for (const char* row : {"\n  planner ", "\n  --stages ", "\n  naive ", "\n  one stage "})
    BOOST_TEST(has(text, row), row);
  BOOST_TEST(has(text, "verdict: the planner's samples/s are "));
  BOOST_TEST(has(text, "x the given stages'"));
  BOOST_TEST(has(text, "planner's stages (M = "));
  BOOST_TEST(has(text, "\n\n--stages (M = 2):\n"));
}

BOOST_AUTO_TEST_CASE(the_runs_plan_and_its_warnings) {
  PlanReport r = report(false);
  r.from_job = true;
  r.warnings = {"stage 0 is predicted to hold too much"};
  const std::string text = plan_text(r);
  BOOST_TEST(has(text, "\nwarning: stage 0 is predicted to hold too much\n"));
  BOOST_TEST(has(text, "\n  run's plan "));
  BOOST_TEST(has(text, "verdict: the run's plan's samples/s"));
  BOOST_TEST(!has(text, "--stages"));
}

BOOST_AUTO_TEST_CASE(json_has_every_plan) {
  const PlanReport r = report(false);
  const std::string json = plan_json(r);
  BOOST_TEST(json.starts_with("{\"job\":\"five\",\"profile\":\"layers.toml\",\"blocks\":5,\"chain\":true,"
                              "\"profile_batch\":8,\"global_batch\":8,\"ranks\":3,"));
  BOOST_TEST(has(json, "\"planning_s\":0.125,\"plan\":{\"method\":"));
  BOOST_TEST(has(json, ",\"naive\":{\"method\":\"naive\""));
  BOOST_TEST(has(json, ",\"one_stage\":{\"method\":\"one stage\""));
  BOOST_TEST(json.ends_with(",\"given\":null}\n"));
}
