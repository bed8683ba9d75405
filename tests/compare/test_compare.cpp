// The strategy comparison (lib/compare): every candidate is the job with its overrides applied, each row's
// prediction is estimate's for that job (one model), the ranking follows the predicted times, CGP pays its
// staleness in steps, and what bounds each strategy is named: a slow device under equal shares, the
// allreduce over a slow link, memory where a rank does not fit. Step times from a roofline (deterministic).
#define BOOST_TEST_MODULE compare
#include <boost/test/unit_test.hpp>

#include <algorithm>

#include "lib/compare/compare.h"
#include "lib/estimate/estimate.h"
#include "lib/job/job.h"
#include "lib/measure/pipeline_plan.h"

using namespace dp;

namespace {

Job job_with(std::vector<std::string> sets) {
  sets.insert(sets.begin(), {"launch.ranks=4", "train.steps=50", "model.tied_head=false", "model.layers=2"});
  return load_job(std::string(DPTRAIN_SOURCE_DIR) + "/configs/gpt.toml", sets);
}

struct Compared {
  estimate::ModelFacts facts;
  estimate::Timing timing;
  compare::Comparison c;
};

Compared compared(const Job& job) {
  Compared r;
  r.facts = estimate::model_facts(job);
  const estimate::DeviceKind d = estimate::device_kind("v100", "test");
  r.timing.profile = estimate::roofline_profile(r.facts, d, false, 8);
  r.timing.basis = "v100's peak rates";
  r.c = compare::compare_strategies(job, r.facts, pipeline_cluster(job), r.timing);
  return r;
}

const compare::Row& row(const compare::Comparison& c, const std::string& name) {
  for (const compare::Row& r : c.rows)
    if (r.candidate.name == name) return r;
  BOOST_FAIL("no row " + name);
  return c.rows.front();
}

}  // namespace

BOOST_AUTO_TEST_CASE(candidates_are_the_job_with_their_overrides) {
  const Job job = job_with({});
  const std::vector<compare::Candidate> cs = compare::candidates(job);
  BOOST_TEST(cs.size() == 6u);
  for (const compare::Candidate& c : cs) {
    const Job expected = load_job(std::string(DPTRAIN_SOURCE_DIR) + "/configs/gpt.toml", [&] {
      std::vector<std::string> s{"launch.ranks=4", "train.steps=50", "model.tied_head=false", "model.layers=2"};
      s.insert(s.end(), c.sets.begin(), c.sets.end());
      return s;
    }());
    BOOST_TEST_CONTEXT(c.name) { BOOST_TEST(job_to_toml(c.job) == job_to_toml(expected)); }
  }
}

BOOST_AUTO_TEST_CASE(each_row_is_estimates_prediction_and_rows_are_ranked_by_time) {
  const Job job = job_with({"cluster.speeds=[1,1,1,0.25]"});
  const Compared r = compared(job);
  BOOST_REQUIRE(r.c.winner == 0);
  double last = 0;
  for (const compare::Row& row : r.c.rows) {
    BOOST_TEST_CONTEXT(row.candidate.name) {
      BOOST_REQUIRE(row.planned);
      const estimate::Estimate e =
          estimate::estimate_job(row.candidate.job, r.facts, pipeline_cluster(row.candidate.job), r.timing, {});
      BOOST_TEST(e.samples_per_s == row.estimate.samples_per_s);
      BOOST_TEST(row.time_s == double(r.c.steps) * row.steps_factor * e.step_s);
      BOOST_TEST(row.time_s >= last);
      last = row.time_s;
    }
  }
  // A device four times slower: equal shares wait for it, I-DAT does not.
  const compare::Row& equal = row(r.c, "data, equal shares, MRA");
  BOOST_TEST(equal.bound.find("a slow device: rank 3 (speed 0.25)") == 0u, equal.bound);
  BOOST_TEST(row(r.c, "data, I-DAT shares, MRA").time_s < 0.6 * equal.time_s);
}

BOOST_AUTO_TEST_CASE(cgp_pays_its_staleness_in_steps) {
  const Job job = job_with({"cluster.speeds=[1,1,1,0.25]", "parallel.cgp.exchange_every=2"});
  const Compared r = compared(job);
  const compare::Row& cgp = row(r.c, "CGP, solver's groups, I-DAT inside");
  BOOST_REQUIRE(cgp.planned);
  BOOST_TEST(cgp.steps_factor == 1.0 + compare::kStalenessStepCost * cgp.estimate.staleness * 2.0);
  BOOST_TEST(cgp.bound.find("staleness") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_slow_link_bounds_the_allreduce) {
  const Job job = job_with({"cluster.ranks_per_node=2", "cluster.links.rack_gbps=0.01", "cluster.links.cross_gbps=0.01",
                            "cluster.nodes_per_rack=1"});
  const Compared r = compared(job);
  const compare::Row& ring = row(r.c, "data, equal shares, ring allreduce");
  BOOST_TEST(ring.bound.find("the allreduce") == 0u, ring.bound);
  BOOST_TEST(ring.bound.find("0.01 Gbit/s") != std::string::npos, ring.bound);
}

BOOST_AUTO_TEST_CASE(memory_rules_out_what_does_not_fit) {
  // A larger model (its state outweighs a sample's activations); each device holds 90% of the least data
  // parallelism can need per rank (micro-batches of one sample, recomputing): not even the levers make
  // it fit; only a pipeline, which splits the state, does.
  Job job = job_with({"model.width=512", "model.layers=8", "train.micro_batch=1", "train.recompute=all"});
  const double least = row(compared(job).c, "data, equal shares, MRA").peak_bytes;
  const std::string gb = std::to_string(0.9 * least / 1e9);
  const std::string memory = "cluster.memory_gb=[" + gb + "," + gb + "," + gb + "," + gb + "]";
  job = job_with({"model.width=512", "model.layers=8", memory});
  const Compared r = compared(job);
  for (const compare::Row& x : r.c.rows)
    if (x.candidate.job.parallel.strategy != StrategyKind::pipeline) {
      BOOST_TEST_CONTEXT(x.candidate.name) {
        BOOST_TEST(!x.fits);
        BOOST_TEST(x.bound.find("memory: rank") == 0u, x.bound);
      }
    }
  BOOST_REQUIRE(r.c.winner == 0);
  BOOST_TEST(r.c.rows.front().candidate.name == "pipeline, planner's plan");
}

BOOST_AUTO_TEST_CASE(the_memory_levers_make_data_parallelism_fit_where_activations_do_not) {
  // Devices holding the model's state and a quarter of a rank's activations and working memory: data
  // parallelism fits in micro-batches (or recomputing), the fastest such setting is its row, and estimate
  // of the row's job agrees that it fits, at the row's samples/s.
  Job job = job_with({"train.global_batch=64"});
  const compare::Row& full = row(compared(job).c, "data, equal shares, MRA");
  const estimate::MemoryTerms& peak = full.estimate.ranks[size_t(full.peak_rank)].memory;
  const double per_samples = peak.activations + peak.workspace;
  BOOST_REQUIRE(per_samples > 0.5 * peak.total());
  const std::string g = std::to_string((peak.total() - 0.75 * per_samples) / 1e9);
  job = job_with({"train.global_batch=64", "cluster.memory_gb=[" + g + "," + g + "," + g + "," + g + "]"});
  const Compared r = compared(job);
  int levered = 0;
  for (const compare::Row& x : r.c.rows)
    if (x.candidate.job.parallel.strategy == StrategyKind::data) {
      BOOST_TEST_CONTEXT(x.candidate.name) {
        BOOST_TEST(x.fits);
        const bool micro = x.candidate.job.train.micro_batch > 0;
        const bool recompute = x.candidate.job.train.recompute == TrainRecompute::all;
        BOOST_TEST((micro || recompute));
        levered += micro || recompute;
        BOOST_TEST(x.candidate.name.find(micro ? "micro-batches of" : "recomputing") != std::string::npos);
        const estimate::Estimate e = estimate::estimate_job(x.candidate.job, estimate::model_facts(x.candidate.job),
                                                            pipeline_cluster(x.candidate.job),
                                                            r.timing, estimate::Options{});
        for (const estimate::RankEstimate& rank : e.ranks) BOOST_TEST(rank.fits);
        BOOST_TEST(e.samples_per_s == x.estimate.samples_per_s, boost::test_tools::tolerance(1e-12));
      }
    }
  BOOST_TEST(levered == 4);
}
