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
#include <limits>
#include <string>
#include <vector>

#include "lib/pipeline/plan.h"
#include "lib/pipeline/plan_internal.h"
#include "lib/pipeline/profile.h"
#include "tests/pipeline/instances.h"

using namespace dp;
using namespace dp::pipeline;

namespace {

// The instance families: "one" (all A100s), "two" (A100 and V100 nodes), "four" (the CGP mix: a node's
// devices of one kind, kinds mixed across nodes), "random" (every device its own speed, 0.3-4, and memory,
// 16-80 GB: fully heterogeneous).
Cluster fleet(int devices, std::mt19937_64& rng, const std::string& family) {
  const double speeds[] = {0.354, 1.0, 2.06, 3.80}, memory[] = {16, 32, 80, 80};
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<ClusterRank> ranks;
  for (int r = 0; r < devices; ++r) {
    const int kind = family == "one" ? 2 : family == "two" ? 1 + int((r / 8 + rng() % 2) % 2)
                                                           : int((r / 8 + rng() % 2) % 4);
    ClusterRank cr;
    cr.speed = speeds[kind], cr.memory_gb = memory[kind], cr.node = r / 8, cr.rack = r / 32;
    if (family == "random") cr.speed = 0.3 + 3.7 * u(rng), cr.memory_gb = 16 + 64 * u(rng);
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

struct Sizes {
  std::vector<int> blocks{100, 1000}, devices{8, 16, 32, 64, 256, 1024};
  std::vector<std::string> families{"one", "two", "four", "random"};
};

void planning_times(int reps, const PlanOptions& o, const Sizes& sizes) {
  std::printf("\nplanning time (limit %.1f s; %d reps):\n", o.seconds, reps);
  std::printf("%7s %8s %-7s %-26s %8s %8s %7s %9s %12s %8s %8s\n", "blocks", "devices", "family", "method", "min s",
              "median s", "stages", "devices", "T (ms)", "x naive", "x data");
  for (const std::string& family : sizes.families)
    for (int n : sizes.blocks)
      for (int d : sizes.devices) {
        std::mt19937_64 rng(uint64_t(n) * 7919 + uint64_t(d));
        // Batches large enough for the devices to share: 16 samples per device.
        const int64_t batch = 16 * int64_t(d);
        std::vector<int64_t> counts;
        for (int64_t m = 1; m <= 64 && batch % m == 0; m *= 2) counts.push_back(m);
        Workload w = testing::random_workload(n, rng, batch, counts);
        for (auto& b : w.blocks) b.param_bytes *= 20, b.saved_bytes *= 4;  // GPU-sized layers
        const Cluster c = fleet(d, rng, family);
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
        std::printf("%7d %8d %-7s %-26s %8.3f %8.3f %7zu %9d %12.3f %8s %8s\n", n, d, family.c_str(),
                    r.method.c_str(), lo, med, r.plan.stages.size(), used, r.prediction.minibatch_s * 1e3,
                    ratio(naive).c_str(), ratio(data).c_str());
        std::fflush(stdout);
      }
}

// Where the exact programs end: on each family's first d devices, for each block count, the program for
// identical devices (one kind only) and the subset search (up to 20 devices), each over every M, bounded
// as plan_pipeline bounds them (by the baselines' seeds): its steps (what PlanOptions::exact_steps
// budgets) and seconds, or where the deadline `seconds` stopped it.
void boundary(const Sizes& sizes, double seconds) {
  std::printf("\nexact programs (deadline %.0f s each):\n", seconds);
  std::printf("%7s %8s %-7s %-7s %9s %10s %10s %9s %8s\n", "blocks", "devices", "family", "program", "finished",
              "estimate", "steps", "s", "ns/step");
  for (const std::string& family : sizes.families)
    for (int n : sizes.blocks)
      for (int d : sizes.devices) {
        std::mt19937_64 rng(uint64_t(n) * 7919 + uint64_t(d));
        const int64_t batch = 16 * int64_t(d);
        std::vector<int64_t> counts;
        for (int64_t m = 1; m <= 64 && batch % m == 0; m *= 2) counts.push_back(m);
        Workload w = testing::random_workload(n, rng, batch, counts);
        for (auto& b : w.blocks) b.param_bytes *= 20, b.saved_bytes *= 4;
        const Cluster c = fleet(d, rng, family);
        const detail::Prefix p(w);
        std::vector<double> bounds;
        for (int64_t M : counts) {
          double t = std::numeric_limits<double>::infinity();
          for (Plan& s : detail::baseline_seeds(w, p, c, M)) t = std::min(t, detail::finish_and_time(w, p, c, s, true));
          bounds.push_back(t);
        }
        for (const char* program : {"runs", "subset"}) {
          const bool runs = program[0] == 'r';
          if (runs ? family != "one" : d > 20) continue;
          const auto deadline = detail::deadline_in(seconds);
          int64_t budget = std::numeric_limits<int64_t>::max();
          bool finished = true;
          const auto t0 = std::chrono::steady_clock::now();
          for (size_t m = 0; m < counts.size() && finished; ++m)
            finished = (runs ? detail::runs_search(w, c, detail::locality_order(c), counts[m], true, bounds[m],
                                                   deadline, budget)
                             : detail::subset_search(w, c, counts[m], true, bounds[m], deadline, budget))
                           .finished;
          const double s = seconds_since(t0), steps = double(std::numeric_limits<int64_t>::max() - budget);
          double estimate = runs ? 0 : detail::exact_work(c, n) * double(counts.size());
          for (int64_t M : counts)
            if (runs) estimate += detail::runs_work(n, d, batch / M) * double(std::min<int64_t>(M, n));
          std::printf("%7d %8d %-7s %-7s %9s %10.3g %10.3g %9.3f %8.1f\n", n, d, family.c_str(), program,
                      finished ? "yes" : "no", estimate, steps, s, s / steps * 1e9);
          std::fflush(stdout);
        }
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
    e.force_exact = true, h.force_heuristic = true, h.seconds = seconds;
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

// "1,2,3" as numbers or words.
std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  for (size_t a = 0; a <= text.size();) {
    const size_t b = std::min(text.find(',', a), text.size());
    out.push_back(text.substr(a, b - a));
    a = b + 1;
  }
  return out;
}

std::vector<int> numbers(const std::string& text) {
  std::vector<int> out;
  for (const std::string& s : split(text)) out.push_back(std::atoi(s.c_str()));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 1, instances = 100;
  PlanOptions o;
  Sizes sizes;
  bool alexnet_too = true, exact_boundary = false;
  std::string profiles = DPTRAIN_SOURCE_DIR "/../shared/profiles/pipedream";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--reps") reps = std::atoi(v.c_str());
    else if (a == "--seconds") o.seconds = std::atof(v.c_str());
    else if (a == "--gap-instances") instances = std::atoi(v.c_str());
    else if (a == "--profiles") profiles = v;
    else if (a == "--blocks") sizes.blocks = numbers(v);
    else if (a == "--devices") sizes.devices = numbers(v);
    else if (a == "--families") sizes.families = split(v);
    else if (a == "--alexnet") alexnet_too = v != "0";
    else if (a == "--boundary") exact_boundary = v != "0";
    else {
      std::fprintf(stderr, "usage: bench_pipeline_planner [--reps R] [--seconds S] [--gap-instances N] [--profiles DIR] "
                           "[--blocks 100,1000] [--devices 8,...,1024] [--families one,two,four,random] [--alexnet 0]\n");
      return 2;
    }
  }
  if (alexnet_too) alexnet(profiles);
  if (exact_boundary) {
    boundary(sizes, o.seconds);
    return 0;
  }
  planning_times(reps, o, sizes);
  if (instances > 0) gap(instances, 0.5);
  return 0;
}
