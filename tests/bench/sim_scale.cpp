// The simulator (lib/sim) at scale: 10,000 workers of four device kinds (speeds as bench_cgp_solvers
// draws them: T4 0.35, V100 1, A100 2.06, H100 3.80 relative), 8 to a node and 4 nodes to a rack over
// 100/25/10 Gbit/s, a ResNet-50-sized update (25.6M parameters) at 1/1200 s per sample on a V100 and 32
// samples per worker, each strategy simulated for 100 steps with noise 0.05 and a random walk of 0.01:
// data parallelism with I-DAT, CGP with the PLS solver's groups (its solve timed apart), a pipeline of
// the GPT's blocks in 4 stages replicated over a quarter of the workers each (its model's times from a
// V100's peak rates), and CGP of pipelines with a group per node (its terms timed apart). Prints wall
// seconds per simulation (min and median over repetitions), events and samples/s, and checks a repeated
// seed gives the same result. A benchmark: it asserts nothing else.
// Usage: bench_sim_scale [--workers N] [--reps R]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>
#include <string>

#include "lib/cgp/cgp.h"
#include "lib/estimate/estimate.h"
#include "lib/job/job.h"
#include "lib/measure/pipeline_plan.h"
#include "lib/sim/job.h"
#include "lib/sim/sim.h"

using namespace dp;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <class F>
void timed(const char* name, int reps, F&& run) {
  std::vector<double> wall;
  sim::Result r;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    r = run();
    wall.push_back(seconds_since(t0));
  }
  const sim::Result again = run();
  std::sort(wall.begin(), wall.end());
  fmt::print("  {:<34} min {:7.3f} s  median {:7.3f} s  {:>10} events  {:12.0f} samples/s  reproducible: {}\n", name,
             wall.front(), wall[wall.size() / 2], r.events, r.samples_per_s, again.step_s == r.step_s ? "yes" : "NO");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int workers = 10000, reps = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--workers")) workers = std::stoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--reps")) reps = std::stoi(argv[i + 1]);
  }
  const int64_t steps = 100;
  const Job fleet = parse_job("", "fleet", {"launch.ranks=32", "cluster.kinds=[\"t4\", \"v100\", \"a100\", \"h100\"]",
                                            "cluster.kind_counts=[8, 8, 8, 8]",
                                            "cluster.kind_speeds=[0.35, 1.0, 2.06, 3.80]", "cluster.ranks_per_node=8",
                                            "cluster.nodes_per_rack=4", "cluster.links.node_gbps=100",
                                            "cluster.links.rack_gbps=25", "cluster.links.cross_gbps=10"});
  const Cluster c = draw_cluster(fleet, workers, 1);
  sim::Variability v;
  v.noise = 0.05, v.emulate.random_walk = 0.01;
  fmt::print("{} workers: {}; {} steps each\n", workers, c.describe(), steps);

  sim::DataSpec data;
  data.compute_s = [](int64_t n) { return 0.002 + double(n) / 1200.0; };
  data.global_batch = 32LL * workers;
  data.balance.mode = BalanceMode::idat;
  data.balance.initial_speeds = c.speeds();
  data.gradient_bytes = 4 * 25.6e6;
  data.comm.algorithm = CommAlgorithm::ring;
  data.update_s = 0.01;
  timed("data parallel, I-DAT, ring", reps, [&] { return sim::simulate_data(c, data, v, steps, 1); });

  cgp::Workload w;
  w.param_bytes = 4 * 25.6e6, w.global_batch = 32LL * workers, w.sample_seconds = 1 / 1200.0, w.hold_staleness = 4;
  cgp::SolveOptions o;
  o.solver = CgpSolver::pls, o.time_limit_s = 10;
  const auto t0 = std::chrono::steady_clock::now();
  const cgp::Solution solved = cgp::solve(c, w, o);
  fmt::print("  (PLS grouping: {} groups in {:.2f} s)\n",
             *std::max_element(solved.grouping.begin(), solved.grouping.end()) + 1, seconds_since(t0));
  timed("CGP, PLS's groups", reps, [&] { return sim::simulate_cgp(c, w, solved.grouping, v, steps, 1); });

  Job gpt = load_job(std::string(DPTRAIN_SOURCE_DIR) + "/configs/gpt.toml",
                     {"model.tied_head=false", "model.layers=6", "launch.ranks=4"});
  const estimate::ModelFacts facts = estimate::model_facts(gpt);
  gpt.train.global_batch = 8LL * workers;
  pipeline::Workload pw = job_pipeline_workload(
      gpt, estimate::roofline_profile(facts, estimate::device_kind("v100", "bench"), false, 8));
  pipeline::Plan plan;
  plan.micro_batches = 16;  // a micro-batch of 5,000 samples: at least one per device of a stage
  const int blocks = int(pw.blocks.size()), quarter = workers / 4;
  for (int s = 0; s < 4; ++s) {
    pipeline::Stage st;
    st.first = s * blocks / 4, st.last = (s + 1) * blocks / 4 - 1;
    st.ranks.resize(size_t(s == 3 ? workers - 3 * quarter : quarter));
    std::iota(st.ranks.begin(), st.ranks.end(), s * quarter);
    plan.stages.push_back(st);
  }
  pw.global_batch = gpt.train.global_batch;
  const pipeline::Prediction p = pipeline::evaluate(pw, c, plan);
  timed("pipeline, 4 stages x 2,500", reps,
        [&] { return sim::simulate_pipeline(c, plan, p, gpt.train.global_batch, v, steps, 1); });

  // CGP of pipelines, a group per node: the estimate's terms (its plan for node 0's 8 devices, every
  // group's prediction on its own, the exchanges with the stages' shards), planning timed apart.
  Job hybrid = gpt;
  hybrid.launch.ranks = workers;
  hybrid.parallel.strategy = StrategyKind::cgp_pipeline;
  hybrid.cluster.ranks_per_node = 8;
  estimate::Timing timing;
  timing.profile = estimate::roofline_profile(facts, estimate::device_kind("v100", "bench"), false, 8);
  const auto t1 = std::chrono::steady_clock::now();
  const estimate::HybridTerms h = estimate::hybrid_terms(hybrid, facts, c, timing);
  const sim::HybridSpec spec = sim::hybrid_spec(hybrid, h);
  fmt::print("  (CGP of pipelines: {} groups of {} stage(s), M = {}, terms in {:.2f} s)\n", h.groups.size(),
             spec.plan.stages.size(), spec.plan.micro_batches, seconds_since(t1));
  timed("CGP of pipelines, a group per node", reps,
        [&] { return sim::simulate_cgp_pipeline(c, spec, v, steps, 1); });
  return 0;
}
