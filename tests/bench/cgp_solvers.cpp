// CGP's grouping solvers side by side: for clusters of 8, 10, 64, 512 and 4096 workers drawn (draw_cluster)
// from a mix of GPU kinds, 8 to a node and 4 nodes to a rack, under several link settings, with I-DAT and
// with equal shares inside groups, each solver's time (min and median over repetitions), predicted
// samples/s, ratio to sorted (the contiguous-cuts baseline) and, up to 10 workers, to exhaustive (the
// optimum), staleness and group count. A benchmark, not a test: it asserts nothing.
// Usage: bench_cgp_solvers [--reps R] [--seconds S] [--sizes 8,10,64,512,4096] [--bound B] [--every E]
//
// Speeds are relative ResNet-50 v1.5 training throughputs (mixed precision, one GPU), V100 = 1:
//   V100 16GB 1200 img/s, A100 80GB 2470 img/s: NVIDIA DeepLearningExamples,
//     PyTorch/Classification/ConvNets/resnet50v1.5/README.md, "Training performance results"
//     (pytorch-21.03 NGC container, 1 GPU, mixed precision) -> A100 2.06;
//   H100 = 1.85 x A100: MLPerf Training v3.0 ResNet-50, Dell's submissions with 16 H100-SXM5-80GB
//     (7.8 min) and 16 A100-SXM-80GB (14.4 min) on the same CPUs -> 3.80;
//   T4: the same README gives no T4 training number; its mixed-precision inference throughput at batch 256,
//     T4 1198 img/s against V100 3382 img/s (0.354), stands in for the training ratio -> 0.35.
// The model: ResNet-50's 25.6M fp32 parameters (102.4 MB per update), 1/1200 s per sample on a V100, a
// global batch of 32 per worker.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "lib/cgp/cgp.h"
#include "lib/core/error.h"
#include "lib/job/job.h"

namespace {

struct LinkSetting {
  const char* name;
  double node_gbps, rack_gbps, cross_gbps;
};

// NVLink-class inside a node; 100/25 Gbit/s Ethernet; and a cluster whose racks meet over 1 Gbit/s.
const LinkSetting kLinks[] = {{"nvlink/100G/25G", 2400, 100, 25}, {"100G/25G/10G", 100, 25, 10}, {"100G/10G/1G", 100, 10, 1}};

dp::Job fleet(const LinkSetting& l) {
  dp::Job job;
  job.cluster.kinds = {"t4", "v100", "a100", "h100"};
  job.cluster.kind_counts = {2, 3, 2, 1};
  job.cluster.kind_speeds = {0.354, 1.0, 2.06, 3.80};
  job.cluster.links.node_gbps = l.node_gbps;
  job.cluster.links.node_latency_us = 2;
  job.cluster.links.rack_gbps = l.rack_gbps;
  job.cluster.links.rack_latency_us = 10;
  job.cluster.links.cross_gbps = l.cross_gbps;
  job.cluster.links.cross_latency_us = 30;
  return job;
}

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> out;
  size_t begin = 0;
  while (begin < s.size()) {
    const size_t end = std::min(s.find(',', begin), s.size());
    out.push_back(std::stoi(s.substr(begin, end - begin)));
    begin = end + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    int reps = 3;
    double seconds = 1.0, bound = 4;
    int64_t every = 1;
    std::vector<int> sizes = {8, 10, 64, 512, 4096};
    for (int i = 1; i + 1 < argc; i += 2) {
      const std::string flag = argv[i], value = argv[i + 1];
      if (flag == "--reps") reps = std::stoi(value);
      else if (flag == "--seconds") seconds = std::stod(value);
      else if (flag == "--sizes") sizes = parse_list(value);
      else if (flag == "--bound") bound = std::stod(value);
      else if (flag == "--every") every = std::stoll(value);
      else throw dp::UsageError(flag, "unknown option", "--reps R --seconds S --sizes LIST --bound B --every E");
    }
    fmt::print("# cgp solvers: bound {:g}, exchange every {}, time limit {:g} s, {} repetition(s); ResNet-50 on a "
               "T4/V100/A100/H100 mix (2:3:2:1)\n",
               bound, every, seconds, reps);
    fmt::print("{:>7} {:<16} {:<6} {:<10} {:>9} {:>9} {:>12} {:>9} {:>9} {:>9} {:>6} {:>10} {}\n", "workers", "links",
               "shares", "solver", "min_s", "median_s", "samples/s", "vs_sort", "vs_exh", "stale", "groups", "evals",
               "stop");
    for (int n : sizes)
      for (const LinkSetting& l : kLinks)
        for (bool balanced : {true, false}) {
          const dp::Job job = fleet(l);
          const dp::Cluster cluster = dp::draw_cluster(job, n, 1);
          dp::cgp::Workload w;
          w.param_bytes = 4 * 25.6e6;
          w.global_batch = 32 * int64_t(n);
          w.sample_seconds = 1.0 / 1200;
          w.balanced = balanced;
          w.exchange_every = every;
          std::vector<std::string> solvers = {"sorted", "aga", "pls"};
          if (n <= 10) solvers.push_back("exhaustive");
          std::map<std::string, double> rate;
          std::map<std::string, dp::cgp::Solution> first;
          std::map<std::string, std::vector<double>> times;
          for (int rep = 0; rep < reps; ++rep)  // repetitions interleaved across the solvers
            for (const std::string& solver : solvers) {
              dp::cgp::SolveOptions o;
              o.solver = dp::enum_named<dp::CgpSolver>(solver).value();
              o.max_staleness = bound;
              o.time_limit_s = seconds;
              o.seed = 1;
              dp::cgp::Solution s = dp::cgp::solve(cluster, w, o);
              times[solver].push_back(s.seconds);
              if (rep == 0) first[solver] = std::move(s);
            }
          for (const std::string& solver : solvers) {
            const dp::cgp::Solution& s = first[solver];
            std::vector<double>& t = times[solver];
            std::sort(t.begin(), t.end());
            int groups = 0;
            for (int g : s.grouping) groups = std::max(groups, g + 1);
            const double vs_sorted = s.prediction.samples_per_s / first["sorted"].prediction.samples_per_s;
            const std::string vs_exhaustive =
                n <= 10 ? fmt::format("{:.4f}", s.prediction.samples_per_s / first["exhaustive"].prediction.samples_per_s)
                        : "-";
            fmt::print("{:>7} {:<16} {:<6} {:<10} {:>9.4f} {:>9.4f} {:>12.1f} {:>9.4f} {:>9} {:>9.3f} {:>6} {:>10} {}\n", n,
                       l.name, balanced ? "idat" : "equal", solver, t.front(), t[t.size() / 2],
                       s.prediction.samples_per_s, vs_sorted, vs_exhaustive, s.prediction.max_staleness, groups,
                       s.evaluations, s.time_limited ? "time" : "converged");
            std::fflush(stdout);
          }
        }
    return 0;
  } catch (const dp::Error& e) {
    std::fprintf(stderr, "bench_cgp_solvers: %s\n", e.line().c_str());
    return e.exit_code();
  }
}
