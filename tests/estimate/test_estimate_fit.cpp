// The estimate's search for the fewest devices of a kind (lib/estimate/fit.cpp) against the estimate on
// every device count: the answer is the first count whose largest rank fits the kind's memory, and the
// count before it does not fit; a kind nothing fits on says so. Also the request's sizes, the roofline
// times of a known device, what [train] micro_batch and recompute change in both, and CGP of pipelines
// against its reductions and its plan chosen with its exchanges.
#define BOOST_TEST_MODULE estimate_fit
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "lib/cluster/cluster.h"
#include "lib/estimate/estimate.h"
#include "lib/job/job.h"
#include "lib/pipeline/profile.h"

using namespace dp;
namespace fs = std::filesystem;

namespace {

Job gpt_job() {
  return load_job(std::string(DPTRAIN_SOURCE_DIR) + "/configs/gpt.toml", {"model.layers=2", "train.global_batch=64"});
}

// The largest rank's buffers of the job on n devices.
double peak_on(Job job, const estimate::ModelFacts& facts, int64_t n) {
  job.launch.ranks = n;
  const estimate::Estimate e = estimate::estimate_job(job, facts, cluster_from_job(job), {}, {});
  double most = 0;
  for (const estimate::RankEstimate& r : e.ranks) most = std::max(most, r.memory.total());
  return most;
}

}  // namespace

BOOST_AUTO_TEST_CASE(fewest_devices_is_the_first_count_that_fits) {
  const Job job = gpt_job();
  const estimate::ModelFacts facts = estimate::model_facts(job);
  std::vector<double> peak{0};
  for (int64_t n = 1; n <= 8; ++n) peak.push_back(peak_on(job, facts, n));
  BOOST_TEST(peak[3] < peak[2]);  // shares and MRA's shards shrink with more ranks
  for (int64_t want : {1, 3, 6}) {
    estimate::DeviceKind d{"small", 0, 1, 0, 1};
    d.memory_gb = (want == 1 ? peak[1] * 1.01 : (peak[size_t(want)] + peak[size_t(want) - 1]) / 2) / 1e9;
    const estimate::Fit f = estimate::fewest_devices(job, facts, {}, d);
    BOOST_TEST_CONTEXT("expected " << want << " devices of " << d.memory_gb << " GB") {
      BOOST_TEST(f.devices == want);
      BOOST_TEST(f.peak_bytes == peak[size_t(want)]);
    }
  }
  estimate::DeviceKind tiny{"tiny", 1e-6, 1, 0, 1};
  const estimate::Fit none = estimate::fewest_devices(job, facts, {}, tiny);
  BOOST_TEST(none.devices == 0);
  BOOST_TEST(none.note.find("does not fit") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(request_and_roofline) {
  Job job = gpt_job();
  job.launch.ranks = 4;
  job.train.threads = 3;
  job.cluster.ranks_per_node = 2;
  const estimate::ModelFacts facts = estimate::model_facts(job);
  const estimate::DeviceKind h200 = estimate::device_kind("h200", "--device");
  estimate::Timing t;
  t.profile = estimate::roofline_profile(facts, h200, false, 16);
  estimate::Options o;
  o.baseline_resident_bytes = 100e6;
  const estimate::Estimate e = estimate::estimate_job(job, facts, cluster_from_job(job), t, o);
  BOOST_TEST(e.request.ranks == 4);
  BOOST_TEST(e.request.nodes == 2);
  BOOST_TEST(e.request.ranks_per_node == 2);
  BOOST_TEST(e.request.cpus_per_rank == 3);
  double most = 0;
  for (const estimate::RankEstimate& r : e.ranks) most = std::max(most, r.resident_bytes);
  BOOST_TEST(double(e.request.memory_per_rank_bytes) >= most * 1.2);
  BOOST_TEST(double(e.request.memory_per_rank_bytes) < most * 1.2 + double(1 << 20));
  // At peak rates a step is at least its FLOPs at the peak, on the slowest rank's share.
  const double flops_s = facts.forward_flops() + facts.backward_flops();
  BOOST_TEST(e.step_s >= flops_s * 16 / (h200.peak_tflops * 1e12));
  BOOST_TEST(e.flops_per_step == flops_s * 64);
  BOOST_TEST(e.job_s > e.step_s * double(e.total_steps));  // evaluations on top
  BOOST_TEST(e.request.time_limit_s > e.job_s);
}

// [train] micro_batch and recompute trade time for memory: recomputing adds about one forward (a forward
// is about a third of forward and backward), micro-batches pay the blocks' fixed times once each, and
// either lets the job fit on fewer devices of a small kind.
BOOST_AUTO_TEST_CASE(memory_levers_trade_time_for_memory) {
  const Job plain = gpt_job();
  Job rebuilt = plain, parts = plain;
  rebuilt.train.recompute = TrainRecompute::all;
  parts.train.micro_batch = 4;
  const estimate::ModelFacts facts = estimate::model_facts(plain), part_facts = estimate::model_facts(parts);
  estimate::Timing t;
  t.profile = estimate::roofline_profile(facts, estimate::device_kind("h200", "--device"), false, 16);
  auto rank0 = [&](const Job& job, const estimate::ModelFacts& f) {
    return estimate::estimate_job(job, f, cluster_from_job(job), t, {}).ranks.front();
  };
  const estimate::RankEstimate a = rank0(plain, facts), r = rank0(rebuilt, facts), p = rank0(parts, part_facts);
  BOOST_TEST_MESSAGE("rank 0: " << a.compute_s << " s, " << a.memory.total() << " B; recompute all " << r.compute_s
                                << " s, " << r.memory.total() << " B; micro_batch 4 " << p.compute_s << " s, "
                                << p.memory.total() << " B");
  BOOST_TEST(r.compute_s > a.compute_s);
  BOOST_TEST(r.compute_s < 1.5 * a.compute_s);
  BOOST_TEST(p.compute_s >= a.compute_s);
  BOOST_TEST(r.memory.total() < a.memory.total());
  BOOST_TEST(p.memory.total() < a.memory.total());
  estimate::DeviceKind d{"small", 0, 1, 0, 1};
  d.memory_gb = peak_on(plain, facts, 3) * 1.01 / 1e9;  // three of them hold the plain job
  const int64_t plain_devices = estimate::fewest_devices(plain, facts, {}, d).devices;
  BOOST_TEST(plain_devices == 3);
  BOOST_TEST(estimate::fewest_devices(rebuilt, facts, {}, d).devices < plain_devices);
  BOOST_TEST(estimate::fewest_devices(parts, part_facts, {}, d).devices < plain_devices);
}

// A step's time besides its blocks (the profile's step_extra_ms, its fixed part per micro-batch) adds
// to every data-parallel rank's compute and to CGP's seconds per sample, in proportion to the rank's share.
BOOST_AUTO_TEST_CASE(a_steps_extra_time_adds_to_a_replicas_compute) {
  Job job = gpt_job();
  job.launch.ranks = 4;  // 16 samples each
  const estimate::ModelFacts facts = estimate::model_facts(job);
  estimate::Timing t;
  t.profile = estimate::roofline_profile(facts, estimate::device_kind("h200", "--device"), false, 8);
  estimate::Timing extra = t;
  extra.profile->step_extra_ms = 3.0;        // per micro-batch of 8
  extra.profile->step_extra_fixed_ms = 1.0;  // of which any micro-batch pays 1
  const Cluster c = cluster_from_job(job);
  const double plain = estimate::estimate_job(job, facts, c, t, {}).ranks.front().compute_s;
  const double more = estimate::estimate_job(job, facts, c, extra, {}).ranks.front().compute_s;
  BOOST_TEST(more - plain == 1e-3 * (1.0 + 16.0 * 2.0 / 8.0), boost::test_tools::tolerance(1e-9));
  job.parallel.strategy = StrategyKind::cgp;
  const double per_sample = estimate::cgp_sample_seconds(job, facts, c, t);
  BOOST_TEST(estimate::cgp_sample_seconds(job, facts, c, extra) - per_sample == 1e-3 * (1.0 + 16.0 * 2.0 / 8.0) / 16.0,
             boost::test_tools::tolerance(1e-9));
}

// Whatever plan the pipeline planner finds feasible fits by the estimate too (which counts what the run's
// memory meter counts): every rank's buffers within its memory, the checkpoint's gathered piece of a
// replicated stage's optimizer state included. A sweep of memory sizes makes it pick replicated stages.
BOOST_AUTO_TEST_CASE(a_pipeline_the_planner_finds_feasible_fits_by_the_estimate) {
  Job job = load_job(std::string(DPTRAIN_SOURCE_DIR) + "/configs/gpt.toml",
                     {"model.tied_head=false", "model.width=384", "model.heads=6", "launch.ranks=4",
                      "parallel.strategy=pipeline"});
  const estimate::ModelFacts facts = estimate::model_facts(job);
  estimate::Timing t;
  t.profile = estimate::roofline_profile(facts, estimate::device_kind("h200", "--device"), false, 8);
  for (pipeline::BlockRow& b : t.profile->blocks)  // a slow device: compute outweighs the links, stages replicate
    b.forward_ms *= 1e4, b.backward_ms *= 1e4, b.forward_fixed_ms *= 1e4, b.backward_fixed_ms *= 1e4;
  int planned = 0, replicated = 0;
  for (double gb = 0.08; gb <= 0.4; gb *= 1.15) {
    job.cluster.memory_gb.assign(4, gb);
    estimate::Estimate e;
    try {
      e = estimate::estimate_job(job, facts, cluster_from_job(job), t, {});
    } catch (const InputError&) {
      continue;  // nothing fits at this size
    }
    ++planned;
    BOOST_TEST_MESSAGE(gb << " GB: " << e.strategy << ", " << e.pipeline_plan->plan.stages.size() << " stage(s)");
    for (const pipeline::Stage& s : e.pipeline_plan->plan.stages) replicated += s.ranks.size() > 1;
    for (const estimate::RankEstimate& r : e.ranks)
      BOOST_TEST(r.fits, gb << " GB: rank " << r.rank << " (" << r.role << ") needs " << r.memory.total() / 1e6
                            << " MB of " << r.memory_limit_bytes / 1e6);
  }
  BOOST_TEST(planned > 0);
  BOOST_TEST(replicated > 0);
}

// CGP of pipelines: one group is the pipeline's estimate exactly (its exchanges carry no parameters);
// two equal groups on links too fast to matter are two pipelines of half the batch side by side, each
// update one stale; over a slow link between them they lose what their exchanges take.
BOOST_AUTO_TEST_CASE(cgp_of_pipelines_is_its_groups_pipelines_and_their_exchanges) {
  Job job = load_job(std::string(DPTRAIN_SOURCE_DIR) + "/configs/gpt.toml",
                     {"model.tied_head=false", "model.layers=2", "launch.ranks=4", "train.global_batch=64",
                      "cluster.ranks_per_node=2", "parallel.pipeline.stages=\"0-1,2-3\"",
                      "parallel.pipeline.micro_batches=4"});
  const estimate::ModelFacts facts = estimate::model_facts(job);
  estimate::Timing t;
  t.profile = estimate::roofline_profile(facts, estimate::device_kind("h200", "--device"), false, 8);
  auto predict = [&](Job j) { return estimate::estimate_job(j, facts, cluster_from_job(j), t, {}); };

  Job one = job;
  one.parallel.strategy = StrategyKind::cgp_pipeline;
  one.parallel.cgp.groups = {0, 0, 0, 0};
  one.parallel.pipeline.stages = "0-1x2,2-3x2";
  Job piped = one;
  piped.parallel.strategy = StrategyKind::pipeline;
  BOOST_TEST(predict(one).samples_per_s == predict(piped).samples_per_s, boost::test_tools::tolerance(1e-12));

  Job two = job;  // a group per node, each a pipeline of 2 stages
  two.parallel.strategy = StrategyKind::cgp_pipeline;
  two.cluster.links.node_gbps = two.cluster.links.rack_gbps = two.cluster.links.cross_gbps = 1e6;
  two.cluster.links.node_latency_us = two.cluster.links.rack_latency_us = two.cluster.links.cross_latency_us = 0;
  Job half = two;
  half.parallel.strategy = StrategyKind::pipeline;
  half.launch.ranks = 2;
  half.train.global_batch = 32;
  half.cluster.ranks_per_node = 2;
  const estimate::Estimate fast = predict(two);
  BOOST_TEST(fast.samples_per_s == 2 * predict(half).samples_per_s, boost::test_tools::tolerance(1e-3));
  BOOST_TEST(fast.staleness == 1.0, boost::test_tools::tolerance(1e-3));  // group 1 exchanges over a link
  BOOST_TEST(fast.ranks.size() == size_t(4));

  Job slow = two;
  slow.cluster.links.rack_gbps = slow.cluster.links.cross_gbps = 0.1;
  const estimate::Estimate over_slow = predict(slow);
  BOOST_TEST(over_slow.samples_per_s < 0.9 * fast.samples_per_s);
  BOOST_TEST(over_slow.bound.find("exchange") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(cgp_of_pipelines_holds_fast_groups_at_the_staleness_bound) {
  // Two groups on free links, the second ten times slower: unheld, the slow group would see about ten
  // of the fast group's updates in its cycle; the leading shard holds the fast group to max_staleness
  // (2) updates per slow cycle, so together they make 2 + 1 of the slow group's updates' samples.
  Job job = load_job(std::string(DPTRAIN_SOURCE_DIR) + "/configs/gpt.toml",
                     {"model.tied_head=false", "model.layers=2", "launch.ranks=4", "train.global_batch=64",
                      "cluster.ranks_per_node=2", "parallel.pipeline.stages=\"0-1,2-3\"",
                      "parallel.pipeline.micro_batches=4", "parallel.strategy=\"cgp-pipeline\"",
                      "parallel.cgp.max_staleness=2", "cluster.speeds=[1, 1, 0.1, 0.1]"});
  job.cluster.links.node_gbps = job.cluster.links.rack_gbps = job.cluster.links.cross_gbps = 1e6;
  job.cluster.links.node_latency_us = job.cluster.links.rack_latency_us = job.cluster.links.cross_latency_us = 0;
  const estimate::ModelFacts facts = estimate::model_facts(job);
  estimate::Timing t;
  t.profile = estimate::roofline_profile(facts, estimate::device_kind("h200", "--device"), false, 8);
  auto predict = [&](Job j) { return estimate::estimate_job(j, facts, cluster_from_job(j), t, {}); };
  Job slow_half = job;  // the slow group alone: a pipeline of 2 stages on the slow devices
  slow_half.parallel.strategy = StrategyKind::pipeline;
  slow_half.launch.ranks = 2;
  slow_half.train.global_batch = 32;
  slow_half.cluster.speeds = {0.1, 0.1};
  const estimate::Estimate held = predict(job);
  BOOST_TEST(held.staleness <= 2.0 + 1e-9);
  BOOST_TEST(held.samples_per_s == 3 * predict(slow_half).samples_per_s, boost::test_tools::tolerance(1e-3));
}

// The planner's plan for one group is the fastest pipeline alone; with the groups' exchanges over a slow
// link between nodes, its cut decides how the exchanges queue at the leading shard. The choice (lib/
// measure/hybrid_plan.h) is at least as fast as the planner's plan and every cut a job could name, the
// same plan as strategy "pipeline"'s for one group, and never one that leaves the run's rank 0 (the
// leading shard's host) out.
BOOST_AUTO_TEST_CASE(cgp_of_pipelines_cuts_its_stages_for_the_groups_exchanges) {
  // The slow-link case of tests/bench/strategy_ranking.py: its MLP's blocks as `dptrain profile --layers`
  // timed them on a CPU (large fixed parts), on devices four times slower.
  const std::string profile = (fs::temp_directory_path() / "estimate_fit_slow_link.toml").string();
  std::ofstream(profile) << R"([profile]
model = "mlp 784-1024-1024-10, 1863690 parameters"
device = "cpu"
micro_batch = 16
input_bytes = 3136
step_extra_ms = 0.45
step_extra_fixed_ms = 0.45
[[block]]
name = "fc1"
forward_ms = 0.447
backward_ms = 0.360
forward_fixed_ms = 0.164
backward_fixed_ms = 0.076
update_ms = 0.604
output_bytes = 4096
saved_bytes = 3136
work_bytes = 0
param_bytes = 3215360
[[block]]
name = "fc2"
forward_ms = 1.124
backward_ms = 1.335
forward_fixed_ms = 0.744
backward_fixed_ms = 0.534
update_ms = 0.879
output_bytes = 4096
saved_bytes = 4096
work_bytes = 8192
param_bytes = 4198400
[[block]]
name = "fc3"
forward_ms = 0.0088
backward_ms = 0.0140
forward_fixed_ms = 0.0007
backward_fixed_ms = 0.0019
update_ms = 0.0083
output_bytes = 0
saved_bytes = 4136
work_bytes = 8192
param_bytes = 41000
)";
  Job job = load_job(std::string(DPTRAIN_SOURCE_DIR) + "/configs/quickstart.toml",
                     {"launch.ranks=4", "model.hidden=[1024,1024]", "train.global_batch=64", "cluster.ranks_per_node=2",
                      "cluster.links.node_gbps=10", "cluster.links.rack_gbps=1", "cluster.speeds=[0.25,0.25,0.25,0.25]",
                      "parallel.strategy=\"cgp-pipeline\""});
  const estimate::ModelFacts facts = estimate::model_facts(job);
  estimate::Timing t;
  t.profile = pipeline::read_block_profile(profile);
  fs::remove(profile);
  auto predict = [&](Job j) { return estimate::estimate_job(j, facts, cluster_from_job(j), t, {}).samples_per_s; };
  const estimate::HybridTerms chosen = estimate::hybrid_terms(job, facts, cluster_from_job(job), t);
  BOOST_TEST_MESSAGE("CGP of pipelines over 1 Gbit/s: " << chosen.pipeline.how << ", "
                                                        << chosen.rates.samples_per_s << " samples/s");
  BOOST_TEST(chosen.rates.samples_per_s == predict(job), boost::test_tools::tolerance(1e-12));
  for (const char* stages : {"0-2x2", "0,1-2", "0-1,2", "0-2@0", "0-2@1"}) {
    Job named = job;
    named.parallel.pipeline.stages = stages;
    BOOST_TEST_CONTEXT("stages " << stages) { BOOST_TEST(predict(job) >= predict(named) * (1 - 1e-12)); }
  }
  // Here the planner's plan for one group (its stage over both devices of a node) loses to a cut.
  Job one_group = job;
  one_group.parallel.strategy = StrategyKind::pipeline;
  one_group.launch.ranks = 2;
  one_group.train.global_batch = 32;
  const auto planners = estimate::estimate_job(one_group, facts, cluster_from_job(one_group), t, {});
  BOOST_TEST(chosen.pipeline.how.find("exchanges") != std::string::npos);
  BOOST_TEST(chosen.pipeline.result.plan.stages.size() != planners.pipeline_plan->plan.stages.size());
  // One group: the pipeline planner's plan as it is.
  Job alone = job;
  alone.parallel.cgp.groups = {0, 0, 0, 0};
  const estimate::HybridTerms single = estimate::hybrid_terms(alone, facts, cluster_from_job(alone), t);
  BOOST_TEST(single.pipeline.how.find("the planner's (") == 0);
  // A slow rank 0: the planner leaves it out of its plan for group 0; the choice keeps it in.
  Job slow_first = job;
  slow_first.cluster.speeds = {0.1, 0.25, 0.25, 0.25};
  const estimate::HybridTerms kept = estimate::hybrid_terms(slow_first, facts, cluster_from_job(slow_first), t);
  BOOST_TEST(kept.leading >= 0);
  BOOST_TEST(kept.rates.samples_per_s > 0);
  Job slow_first_alone = alone;  // one group: its shard too is on rank 0
  slow_first_alone.cluster.speeds = {0.05, 0.25, 0.25, 0.25};
  const estimate::HybridTerms kept_alone =
      estimate::hybrid_terms(slow_first_alone, facts, cluster_from_job(slow_first_alone), t);
  BOOST_TEST(kept_alone.leading >= 0);
  BOOST_TEST(kept_alone.rates.samples_per_s > 0);
}

BOOST_AUTO_TEST_CASE(a_fluctuating_rank_is_charged_step_by_step) {
  // Four equal ranks; in steps 0-19 of 40 one of them is 3x slower, the slowness moving to the next rank
  // every 10 steps. Equal shares wait for it in each of those steps; I-DAT's balancer, played out,
  // re-divides for it a few steps after each move: dearer than a division that knew the speeds at once,
  // cheaper than equal shares.
  auto job_of = [](const char* mode) {
    Job job = load_job(std::string(DPTRAIN_SOURCE_DIR) + "/configs/quickstart.toml",
                       {"launch.ranks=4", "train.steps=40", "train.global_batch=8192", "cluster.ranks_per_node=1",
                        std::string("parallel.balance.mode=") + mode});
    job.cluster.links.node_gbps = job.cluster.links.rack_gbps = job.cluster.links.cross_gbps = 1e6;  // compute-bound
    return job;
  };
  const estimate::ModelFacts facts = estimate::model_facts(job_of("equal"));
  estimate::Timing t;
  t.profile = estimate::roofline_profile(facts, estimate::device_kind("v100", "--device"), false, 8);
  auto step = [&](const Job& j) { return estimate::estimate_job(j, facts, cluster_from_job(j), t, {}).step_s; };
  auto fluctuating = [](Job j, int64_t to) {
    j.cluster.emulate.fluctuate_rank = 0;
    j.cluster.emulate.fluctuate_factor = 3;
    j.cluster.emulate.fluctuate_to = to;
    j.cluster.emulate.fluctuate_move_every = 10;
    return j;
  };
  auto one_slow = [](Job j) {
    j.cluster.speeds = {1.0 / 3, 1, 1, 1};
    return j;
  };
  const Job equal = job_of("equal"), idat = job_of("idat");
  const double steady = step(equal), slowed = step(one_slow(equal)), knowing = step(one_slow(idat));
  BOOST_TEST_REQUIRE(slowed > knowing * 1.1);
  BOOST_TEST_REQUIRE(knowing > steady * 1.01);
  BOOST_TEST(step(fluctuating(equal, 20)) == (steady + slowed) / 2, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(step(fluctuating(equal, 1000)) == slowed, boost::test_tools::tolerance(1e-9));  // every step
  const double played = step(fluctuating(idat, 1000));
  BOOST_TEST(played > knowing * 1.01);
  BOOST_TEST(played < slowed * 0.99);
}
