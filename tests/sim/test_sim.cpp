// The simulator (lib/sim) against the analytical models it replays and on its own: without variability a
// data-parallel job's simulated step is estimate's (equal and I-DAT shares, ring and MRA), CGP's
// throughput within a tenth of lib/cgp's prediction where exchanges do not queue (slower where they do)
// and its staleness held near the bound, a pipeline's mini-batch the estimate's (both play its 1F1B
// schedule), also under a slow window moving over its ranks; ring phases share a node's link when several
// flows leave it; I-DAT's balancer recovers a step that a slow window lengthened under
// equal shares; CGP of pipelines within a tenth of its model, and with one group the pipeline step for
// step; a seeded run is reproducible bit for bit, another seed differs; 2,000 workers of mixed
// kinds simulate (the 10,000-worker timing is tests/bench's); CGP's groups balance inside as the
// runtime's do.
#define BOOST_TEST_MODULE sim
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "lib/cgp/cgp.h"
#include "lib/estimate/estimate.h"
#include "lib/job/job.h"
#include "lib/measure/pipeline_plan.h"
#include "lib/sim/job.h"

using namespace dp;

namespace {

// The mixed lab cluster: two fast and two old devices, 10 Gbit/s in a rack, 1 Gbit/s across.
Job lab_job(std::vector<std::string> sets) {
  std::vector<std::string> all{"launch.ranks=4", "train.steps=50", "model.tied_head=false", "model.layers=2",
                               "cluster.kinds=[\"fast\", \"old\"]", "cluster.kind_counts=[2, 2]",
                               "cluster.kind_speeds=[1.0, 0.4]", "cluster.ranks_per_node=1",
                               "cluster.nodes_per_rack=2", "cluster.links.rack_gbps=10",
                               "cluster.links.cross_gbps=1"};
  all.insert(all.end(), sets.begin(), sets.end());
  return load_job(std::string(DPTRAIN_SOURCE_DIR) + "/configs/gpt.toml", all);
}

struct Inputs {
  Job job;
  estimate::ModelFacts facts;
  estimate::Timing timing;
  Cluster cluster;
};

Inputs inputs(const Job& job) {
  Inputs in{job, estimate::model_facts(job), {}, pipeline_cluster(job)};
  in.timing.profile = estimate::roofline_profile(in.facts, estimate::device_kind("v100", "test"), false, 8);
  in.timing.basis = "v100's peak rates";
  return in;
}

double predicted_step(const Inputs& in) {
  return estimate::estimate_job(in.job, in.facts, in.cluster, in.timing, estimate::Options{}).step_s;
}

sim::Result simulated(const Inputs& in, const sim::Variability& v, int64_t steps = 40, uint64_t seed = 1) {
  return sim::simulate_job(in.job, in.facts, in.cluster, in.timing, v, steps, seed);
}

}  // namespace

BOOST_AUTO_TEST_CASE(without_variability_a_data_parallel_step_is_estimates) {
  for (const char* balance : {"equal", "idat"})
    for (const char* comm : {"ring", "mra"}) {
      const Inputs in = inputs(lab_job({"parallel.strategy=data", std::string("parallel.balance.mode=") + balance,
                                        std::string("parallel.comm.algorithm=") + comm}));
      BOOST_TEST_CONTEXT(balance << ", " << comm) {
        const double want = predicted_step(in);
        const sim::Result r = simulated(in, {});
        BOOST_TEST(want > 0);
        // I-DAT starts from the described speeds, the ones the estimate divides by: the same first step;
        // then the runtime's balancer, seeing the fixed times too, may find a division a little faster.
        BOOST_TEST(r.step_s.front() == want, boost::test_tools::tolerance(1e-9));
        BOOST_TEST(r.median_step_s <= want * (1 + 1e-9));
        BOOST_TEST(r.median_step_s >= want * 0.99);
      }
    }
}

BOOST_AUTO_TEST_CASE(without_variability_cgp_is_within_a_tenth_of_its_model) {
  // Compute-bound (fast links): the exchanges rarely meet at the server, which lib/cgp's model assumes
  // below full load; on the lab's 1 Gbit/s links they queue (the simulation is slower, as it should be).
  for (const char* groups : {"[]", "[0, 0, 1, 1]", "[0, 1, 2, 3]"}) {
    const Inputs in = inputs(lab_job({"parallel.strategy=cgp", "parallel.balance.mode=idat",
                                      "cluster.links.rack_gbps=100", "cluster.links.cross_gbps=100",
                                      std::string("parallel.cgp.groups=") + groups}));
    BOOST_TEST_CONTEXT(groups) {
      const estimate::Estimate e = estimate::estimate_job(in.job, in.facts, in.cluster, in.timing, {});
      const sim::Result r = simulated(in, {}, 400);
      BOOST_TEST_MESSAGE(groups << ": model " << e.samples_per_s << " samples/s, staleness " << e.staleness
                                << "; simulated " << r.samples_per_s << ", staleness up to " << r.max_staleness);
      // The model holds the fast groups by rates, the simulator update by update, the waiting updates
      // oldest read first as the runtime's server takes them (first come first served instead, four
      // groups of one were 13% apart: the fast groups' held updates went before the slow one's).
      BOOST_TEST(r.samples_per_s == e.samples_per_s, boost::test_tools::tolerance(0.10));
      // The server holds an update while another group has seen the bound (one waiting at the server
      // aside, which may then see one more per group landing before it).
      BOOST_TEST(r.max_staleness <= double(in.job.parallel.cgp.max_staleness + 2));
    }
  }
  const Inputs slow_links = inputs(lab_job({"parallel.strategy=cgp", "parallel.cgp.groups=[0, 0, 1, 1]"}));
  const estimate::Estimate e = estimate::estimate_job(slow_links.job, slow_links.facts, slow_links.cluster,
                                                      slow_links.timing, {});
  // Slow links: one group's long exchange keeps the other waiting at the server, as the model plays out.
  BOOST_TEST(simulated(slow_links, {}, 400).samples_per_s == e.samples_per_s, boost::test_tools::tolerance(0.10));
}

// The estimate plays a pipeline's mini-batch through its 1F1B schedule, as the simulator does: without
// variability the same step, on the lab's fast and slow links and for plans of one, two and two unequal
// stages (the planner's closed form, which its search uses, is up to half slower on a link-bound plan).
BOOST_AUTO_TEST_CASE(without_variability_a_pipeline_step_is_estimates) {
  for (const char* stages : {"", "0-1,2-3", "0-0,1-3"}) {
    std::vector<std::string> sets{"parallel.strategy=pipeline"};
    if (*stages) sets.push_back(std::string("parallel.pipeline.stages=\"") + stages + "\"");
    const Inputs in = inputs(lab_job(sets));
    BOOST_TEST_CONTEXT(stages) {
      const double want = predicted_step(in);
      const sim::Result r = simulated(in, {}, 5);
      BOOST_TEST(want > 0);
      BOOST_TEST(r.median_step_s == want, boost::test_tools::tolerance(1e-9));
    }
  }
}

// A slow window moving over a pipeline's ranks is played once: the estimate prices its plan (made, and
// its replicated stages' rows divided, under step 0's slowness) step by step under the window, and
// without noise the simulator's mean step over the same steps is the same, for the planner's plan, a
// stage replicated over every rank (rank 0 slowed at the start holds the smallest rows) and two stages of
// two replicas.
BOOST_AUTO_TEST_CASE(without_noise_a_pipeline_under_a_moving_slow_window_is_estimates) {
  for (const char* stages : {"", "0-3x4", "0-1x2,2-3x2"}) {
    std::vector<std::string> sets{"parallel.strategy=pipeline", "train.steps=40", "cluster.kind_speeds=[1.0, 1.0]",
                                  "cluster.emulate.fluctuate_rank=0", "cluster.emulate.fluctuate_factor=3",
                                  "cluster.emulate.fluctuate_to=40", "cluster.emulate.fluctuate_move_every=10"};
    if (*stages) sets.push_back(std::string("parallel.pipeline.stages=\"") + stages + "\"");
    const Inputs in = inputs(lab_job(sets));
    BOOST_TEST_CONTEXT(stages) {
      const double want = predicted_step(in);
      const sim::Result r = simulated(in, sim::job_variability(in.job, 0), 40);
      BOOST_TEST(want > 0);
      BOOST_TEST(r.mean_step_s == want, boost::test_tools::tolerance(1e-9));
    }
  }
}

// CGP of pipelines, two groups (one per node: two fast devices, two at 0.4) of a 2-stage pipeline each:
// without variability the simulation is the model's within a tenth (both play the leading shard's queue
// out, the pipelines their 1F1B schedule) on fast links, on the lab's 1 Gbit/s links where the fast
// group, on the shards' own node, runs free (bound 1000), and where the hold binds (bound 4: the slow
// group's exchange takes 40 times the fast group's mini-batch; the model holds by rates, the simulator
// update by update, oldest read first).
BOOST_AUTO_TEST_CASE(without_variability_cgp_of_pipelines_is_within_a_tenth_of_its_model) {
  struct Case {
    const char* gbps;
    const char* bound;
  };
  for (const Case& k : {Case{"100", "4"}, Case{"1", "1000"}, Case{"1", "4"}}) {
    const Inputs in = inputs(lab_job({"parallel.strategy=cgp-pipeline", "cluster.ranks_per_node=2",
                                      std::string("cluster.links.rack_gbps=") + k.gbps,
                                      std::string("cluster.links.cross_gbps=") + k.gbps,
                                      std::string("parallel.cgp.max_staleness=") + k.bound}));
    BOOST_TEST_CONTEXT(k.gbps << " Gbit/s, bound " << k.bound) {
      const estimate::Estimate e = estimate::estimate_job(in.job, in.facts, in.cluster, in.timing, {});
      const sim::Result r = simulated(in, {}, 200);
      BOOST_TEST_MESSAGE(k.gbps << " Gbit/s, bound " << k.bound << ": model " << e.samples_per_s
                                << " samples/s; simulated " << r.samples_per_s << ", staleness up to "
                                << r.max_staleness);
      BOOST_TEST(e.samples_per_s > 0);
      BOOST_TEST(r.samples_per_s == e.samples_per_s, boost::test_tools::tolerance(0.10));
      BOOST_TEST(r.max_staleness <= double(in.job.parallel.cgp.max_staleness + 2));
    }
  }
}

// One group of pipelines is the pipeline: the same plan, the same draws, the same steps.
BOOST_AUTO_TEST_CASE(one_group_of_pipelines_simulates_as_the_pipeline) {
  sim::Variability v;
  v.noise = 0.1, v.emulate.random_walk = 0.02;
  const Inputs hybrid = inputs(lab_job({"parallel.strategy=cgp-pipeline", "parallel.cgp.groups=[0, 0, 0, 0]"}));
  const Inputs pipeline = inputs(lab_job({"parallel.strategy=pipeline"}));
  const sim::Result a = simulated(hybrid, v, 30, 5), b = simulated(pipeline, v, 30, 5);
  BOOST_REQUIRE(a.step_s.size() == b.step_s.size());
  for (size_t i = 0; i < a.step_s.size(); ++i)
    BOOST_TEST(a.step_s[i] == b.step_s[i], boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(ring_phases_share_a_nodes_link) {
  // Four ranks, two per node: the ring 0,2,1,3 crosses between the nodes on every edge (two flows leave
  // each node at once), the ring 0,1,2,3 on two.
  std::vector<ClusterRank> ranks(4);
  for (int r = 0; r < 4; ++r) ranks[size_t(r)].node = r / 2;
  const Cluster c(ranks, Link{100, 0}, Link{10, 0}, Link{10, 0});
  const double chunk = 1e6;
  const double one = Link{10, 0}.seconds(chunk);
  const std::vector<int> in_order{0, 1, 2, 3}, crossing{0, 2, 1, 3};
  BOOST_TEST(sim::ring_phase_seconds(c, in_order, chunk) == one, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(sim::ring_phase_seconds(c, crossing, chunk) == 2 * one, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(idat_recovers_what_a_slow_window_costs_equal_shares) {
  sim::Variability v;
  v.emulate.fluctuate_rank = 1, v.emulate.fluctuate_from = 10, v.emulate.fluctuate_to = 200;
  v.emulate.fluctuate_factor = 3;
  // Equal devices on fast links: the step is compute.
  const std::vector<std::string> fast{"parallel.strategy=data", "cluster.kind_speeds=[1.0, 1.0]",
                                      "cluster.links.rack_gbps=100", "cluster.links.cross_gbps=100"};
  std::vector<std::string> equal_sets = fast, idat_sets = fast;
  equal_sets.push_back("parallel.balance.mode=equal");
  idat_sets.push_back("parallel.balance.mode=idat");
  const Inputs equal = inputs(lab_job(equal_sets)), idat = inputs(lab_job(idat_sets));
  const double e = simulated(equal, v, 200).median_step_s, i = simulated(idat, v, 200).median_step_s;
  BOOST_TEST(i < 0.8 * e);
  BOOST_TEST(simulated(equal, {}, 200).median_step_s < e);
}

// CGP's groups divide their batch with a Balancer of their own, as the runtime's groups do: under a
// moving slow window one group of four with I-DAT inside keeps up with data parallelism with I-DAT (fast
// links: the exchanges cost little), and beats the same group on equal shares.
BOOST_AUTO_TEST_CASE(cgp_groups_balance_inside_as_the_runtime_does) {
  sim::Variability v;
  v.emulate.fluctuate_rank = 0, v.emulate.fluctuate_from = 0, v.emulate.fluctuate_to = 400;
  v.emulate.fluctuate_factor = 3, v.emulate.fluctuate_move_every = 10;
  auto rate = [&](const char* strategy, const char* balance) {
    return simulated(inputs(lab_job({std::string("parallel.strategy=") + strategy, "parallel.cgp.groups=[0, 0, 0, 0]",
                                     std::string("parallel.balance.mode=") + balance, "cluster.kind_speeds=[1.0, 1.0]",
                                     "cluster.links.rack_gbps=100", "cluster.links.cross_gbps=100"})),
                     v, 400)
        .samples_per_s;
  };
  const double data = rate("data", "idat"), cgp = rate("cgp", "idat"), cgp_equal = rate("cgp", "equal");
  BOOST_TEST_MESSAGE("data, I-DAT " << data << " samples/s; one CGP group, I-DAT " << cgp << ", equal " << cgp_equal);
  BOOST_TEST(cgp == data, boost::test_tools::tolerance(0.10));
  BOOST_TEST(cgp > 1.2 * cgp_equal);
}

BOOST_AUTO_TEST_CASE(a_seeded_run_is_reproducible) {
  sim::Variability v;
  v.noise = 0.1, v.emulate.random_walk = 0.02;
  for (const char* strategy : {"data", "cgp", "pipeline", "cgp-pipeline"}) {
    const Inputs in = inputs(lab_job({std::string("parallel.strategy=") + strategy, "cluster.ranks_per_node=2"}));
    BOOST_TEST_CONTEXT(strategy) {
      const sim::Result a = simulated(in, v, 30, 7), b = simulated(in, v, 30, 7), other = simulated(in, v, 30, 8);
      BOOST_TEST(a.step_s == b.step_s, boost::test_tools::per_element());
      BOOST_TEST(a.samples_per_s != other.samples_per_s);
    }
  }
}

BOOST_AUTO_TEST_CASE(two_thousand_workers_of_mixed_kinds) {
  Job job = lab_job({"parallel.strategy=data", "parallel.balance.mode=idat"});
  const Cluster c = draw_cluster(job, 2000, 3);
  job.launch.ranks = 2000;
  job.train.global_batch = 16000;
  Inputs in{job, estimate::model_facts(job), {}, c};
  in.timing.profile = estimate::roofline_profile(in.facts, estimate::device_kind("v100", "test"), false, 8);
  job.cluster.kind_counts = {1000, 1000};
  in.job = job;
  const sim::Result r = simulated(in, sim::Variability{0.05}, 20);
  BOOST_TEST(r.step_s.size() == 20u);
  BOOST_TEST(r.samples_per_s > 0);
  BOOST_TEST(r.events >= 20 * 2000);
}
