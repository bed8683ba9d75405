// best_given_stages: a user's stages at their best micro-batch count (the fastest that fits, else the
// fastest), each plan completed by the caller's `finish`; counts whose micro-batches are too small for a
// stage's replicas skipped; the first refusal thrown when every count is refused.
#define BOOST_TEST_MODULE given_stages
#include <boost/test/unit_test.hpp>

#include <optional>
#include <random>

#include "lib/core/error.h"
#include "lib/pipeline/plan.h"
#include "tests/pipeline/instances.h"

using namespace dp::pipeline;

namespace {

struct Fixture {
  std::mt19937_64 rng{7};
  Workload w = testing::random_workload(6, rng, 8, {1, 2, 4, 8});
  dp::Cluster c = testing::random_cluster(4, w, rng, 100.0);  // roomy: everything fits
};

// What best_given_stages must pick: the fastest that fits over every count parse_stages accepts.
PlanResult expected(const std::string& stages, const Workload& w, const dp::Cluster& c) {
  std::optional<PlanResult> best;
  for (int64_t M : w.micro_batch_counts) {
    PlanResult r;
    try {
      r = finish_plan(w, c, parse_stages(stages, w, c, M, "--stages"));
    } catch (const dp::UsageError&) {
      continue;
    }
    if (!best || (r.feasible && !best->feasible) ||
        (r.feasible == best->feasible && r.prediction.minibatch_s < best->prediction.minibatch_s))
      best = r;
  }
  BOOST_REQUIRE(best.has_value());
  return *best;
}

}  // namespace

BOOST_FIXTURE_TEST_CASE(the_fastest_count_with_the_callers_finish, Fixture) {
  int finished = 0;
  const PlanResult r = best_given_stages("0-2,3-5x3", w, c, "--stages", [&](Plan p) {
    ++finished;
    return finish_plan(w, c, std::move(p));
  });
  const PlanResult want = expected("0-2,3-5x3", w, c);
  BOOST_TEST(r.plan.micro_batches == want.plan.micro_batches);
  BOOST_TEST(r.prediction.minibatch_s == want.prediction.minibatch_s);
  BOOST_TEST(r.method == "given");
  BOOST_TEST(r.plan.stages.size() == 2u);
  // 3 replicas need at least 3 samples a micro-batch: M = 4 (2 samples) and 8 (1) are skipped.
  BOOST_TEST(finished == 2);
  BOOST_TEST(r.plan.micro_batches <= 2);
}

BOOST_FIXTURE_TEST_CASE(a_fitting_plan_beats_a_faster_one_that_does_not_fit, Fixture) {
  // The caller's finish marks the fastest count's plan as not fitting: the next fastest is chosen.
  const PlanResult fastest = expected("0-5", w, c);
  const PlanResult r = best_given_stages("0-5", w, c, "--stages", [&](Plan p) {
    PlanResult out = finish_plan(w, c, std::move(p));
    if (out.plan.micro_batches == fastest.plan.micro_batches) out.feasible = false;
    return out;
  });
  BOOST_TEST(r.feasible);
  BOOST_TEST(r.plan.micro_batches != fastest.plan.micro_batches);
}

BOOST_FIXTURE_TEST_CASE(every_count_refused_throws_the_first_refusal, Fixture) {
  try {
    best_given_stages("0-2,4-5", w, c, "JOB [parallel.pipeline] stages",
                      [&](Plan p) { return finish_plan(w, c, std::move(p)); });
    BOOST_FAIL("no error");
  } catch (const dp::UsageError& e) {
    BOOST_TEST(e.where() == "JOB [parallel.pipeline] stages");
    BOOST_TEST(e.message().find("blocks 3-3 are in no stage") != std::string::npos);
  }
}
