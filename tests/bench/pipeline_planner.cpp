// The pipeline planner's cost (lib/pipeline/plan.h): planning time for 100 and 1000 blocks on 8 to 1024
// devices, of a mix of kinds and of one kind (min and median over repetitions), the plan found and its
// predicted time against the naive plan and data parallelism; PipeDream's AlexNet profile on 4-64 equal
// devices (the plan on more devices is never slower); and the heuristic's gap to the exact planner on
// random instances both can solve. A benchmark, not a test: it asserts nothing.
// Usage: bench_pipeline_planner [--reps R] [--seconds S] [--gap-instances N] [--profiles DIR]
//
// Devices: the CGP bench's mix of GPU kinds (relative speeds T4 0.35, V100 1, A100 2.06, H100 3.80;
// memories 16, 32, 80, 80 GB), 8 to a node, 4 nodes to a rack, links 100 Gbit/s in a node, 25 in a rack,
// 10 across. Blocks: random (tests/pipeline/instances.h) with forward times around 1 ms per sample.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "lib/pipeline/plan.h"
#include "lib/pipeline/profile.h"
#include "tests/pipeline/instances.h"

using namespace dp;
using namespace dp::pipeline;

namespace {

Cluster fleet(int devices, std::mt19937_64& rng, bool one_kind = false) {
  const double speeds[] = {0.354, 1.0, 2.06, 3.80}, memory[] = {16, 32, 80, 80};
  std::vector<ClusterRank> ranks;
  for (int r = 0; r < devices; ++r) {
    // a node's devices of one kind, kinds mixed across nodes (or all A100s)
    const int kind = one_kind ? 2 : int((r / 8 + rng() % 2) % 4);
    ClusterRank cr;
    cr.speed = speeds[kind], cr.memory_gb = memory[kind], cr.node = r / 8, cr.rack = r / 32;
    ranks.push_back(cr);
  }
  return Cluster(ranks, Link{100, 2}, Link{25, 10}, Link{10, 30});
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::pair<double, double> min_median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v.front(), v[v.size() / 2]};
}

void planning_times(int reps, double seconds, bool one_kind) {
  std::printf("\nplanning time, %s (heuristic limit %.1f s over the micro-batch counts; %d reps):\n",
              one_kind ? "one kind (A100)" : "four kinds", seconds, reps);
  std::printf("%7s %8s %-26s %10s %10s %7s %9s %12s %9s %9s\n", "blocks", "devices", "method", "min s", "median s",
              "stages", "devices", "T (ms)", "x naive", "x data");
  for (int n : {22, 100, 1000})
    for (int d : {8, 16, 32, 64, 256, 1024}) {
      if (n == 22 && d > 64) continue;
      std::mt19937_64 rng(uint64_t(n) * 7919 + uint64_t(d));
      // Batches large enough for the devices to share: 16 samples per device.
      const int64_t batch = 16 * int64_t(d);
      std::vector<int64_t> counts;
      for (int64_t m = 1; m <= 64 && batch % m == 0; m *= 2) counts.push_back(m);
      Workload w = testing::random_workload(n, rng, batch, counts);
      for (auto& b : w.blocks) b.param_bytes *= 20, b.saved_bytes *= 4;  // GPU-sized layers
      const Cluster c = fleet(d, rng, one_kind);
      PlanOptions o;
      o.heuristic_seconds = seconds;
      std::vector<double> times;
      PlanResult r;
      for (int k = 0; k < reps; ++k) {
        const auto t0 = std::chrono::steady_clock::now();
        r = plan_pipeline(w, c, o);
        times.push_back(seconds_since(t0));
      }
      const PlanResult naive = naive_plan(w, c), data = data_parallel_plan(w, c);
      const auto [lo, med] = min_median(times);
      int used = 0;
      for (const auto& s : r.plan.stages) used += int(s.ranks.size());
      auto ratio = [&](const PlanResult& b) {
        return b.feasible ? fmt::format("{:.2f}", b.prediction.minibatch_s / r.prediction.minibatch_s) : "no fit";
      };
      std::printf("%7d %8d %-26s %10.3f %10.3f %7zu %9d %12.3f %9s %9s\n", n, d, r.method.c_str(), lo, med,
                  r.plan.stages.size(), used, r.prediction.minibatch_s * 1e3, ratio(naive).c_str(),
                  ratio(data).c_str());
    }
}

// PipeDream's AlexNet profile (issue 27): global batch 64, equal devices on one node, 8 Gbit/s, no latency.
void alexnet(const std::string& dir) {
  const LayerProfile p = read_pipedream_graph(dir + "/alexnet_graph.txt");
  Workload w = workload_from_profile(p, 64);
  w.global_batch = 64;
  for (int64_t m = 1; m <= 64; ++m)
    if (64 % m == 0) w.micro_batch_counts.push_back(m);
  std::printf("\nAlexNet (PipeDream's profile, %zu blocks, batch 64, 8 Gbit/s):\n", w.blocks.size());
  std::printf("%8s %-26s %10s %12s %9s %7s\n", "devices", "method", "plan s", "samples/s", "used", "stages");
  for (int d : {4, 8, 16, 32, 64}) {
    std::vector<ClusterRank> ranks(static_cast<size_t>(d));
    const Cluster c(ranks, Link{8, 0}, Link{8, 0}, Link{8, 0});
    const auto t0 = std::chrono::steady_clock::now();
    const PlanResult r = plan_pipeline(w, c);
    const double t = seconds_since(t0);
    int used = 0;
    for (const auto& s : r.plan.stages) used += int(s.ranks.size());
    std::printf("%8d %-26s %10.3f %12.1f %9d %7zu\n", d, r.method.c_str(), t, r.prediction.samples_per_s, used,
                r.plan.stages.size());
  }
}

void gap(int instances, double seconds) {
  std::printf("\nheuristic against exact (%d random instances, 4-16 blocks, 3-8 devices, memory mixed):\n",
              instances);
  std::vector<double> ratios, exact_s, heuristic_s;
  std::mt19937_64 rng(11);
  int equal = 0, both = 0, heuristic_missed = 0;
  for (int i = 0; i < instances; ++i) {
    const int n = 4 + int(rng() % 13), d = 3 + int(rng() % 6);
    Workload w = testing::random_workload(n, rng, 16, {1, 2, 4, 8, 16});
    const Cluster c = testing::random_cluster(d, w, rng, 1.0 + double(rng() % 100) / 100);
    PlanOptions e, h;
    e.force_exact = true, h.force_heuristic = true, h.heuristic_seconds = seconds;
    auto t0 = std::chrono::steady_clock::now();
    const PlanResult re = plan_pipeline(w, c, e);
    exact_s.push_back(seconds_since(t0));
    t0 = std::chrono::steady_clock::now();
    const PlanResult rh = plan_pipeline(w, c, h);
    heuristic_s.push_back(seconds_since(t0));
    if (!re.feasible) continue;
    if (!rh.feasible) {
      ++heuristic_missed;
      continue;
    }
    ++both;
    const double q = rh.prediction.minibatch_s / re.prediction.minibatch_s;
    ratios.push_back(q);
    equal += q < 1 + 1e-9;
  }
  std::sort(ratios.begin(), ratios.end());
  double mean = 0;
  for (double q : ratios) mean += q / double(ratios.size());
  const auto [e_lo, e_med] = min_median(exact_s);
  const auto [h_lo, h_med] = min_median(heuristic_s);
  std::printf("  %d feasible for both, heuristic optimal on %d; T ratio heuristic / exact: mean %.4f, median %.4f, "
              "90th %.4f, max %.4f\n",
              both, equal, mean, ratios[ratios.size() / 2], ratios[ratios.size() * 9 / 10], ratios.back());
  std::printf("  heuristic found no plan where exact did: %d\n", heuristic_missed);
  std::printf("  time per instance: exact min %.3f / median %.3f / max %.3f s, heuristic min %.3f / median %.3f s\n",
              e_lo, e_med, *std::max_element(exact_s.begin(), exact_s.end()), h_lo, h_med);
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 1, instances = 100;
  double seconds = 2.0;
  std::string profiles = DPTRAIN_SOURCE_DIR "/../shared/profiles/pipedream";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--seconds")) seconds = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--gap-instances")) instances = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--profiles")) profiles = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: bench_pipeline_planner [--reps R] [--seconds S] [--gap-instances N] [--profiles DIR]\n");
      return 2;
    }
  }
  alexnet(profiles);
  planning_times(reps, seconds, true);
  planning_times(reps, seconds, false);
  if (instances > 0) gap(instances, 0.5);
  return 0;
}
