// Random planner instances for the planner tests and tests/bench/pipeline_planner.cpp: blocks with random
// times, activations and parameters; devices with random speeds and memories (tight enough that some
// stages must recompute and some requests cannot fit); a random link matrix.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "lib/cluster/cluster.h"
#include "lib/pipeline/plan.h"

namespace dp::pipeline::testing {

struct Instance {
  Workload workload;
  Cluster cluster;
};

inline Workload random_workload(int blocks, std::mt19937_64& rng, int64_t global_batch = 8,
                                std::vector<int64_t> micro_batch_counts = {1, 2, 4, 8}) {
  std::uniform_real_distribution<double> u(0, 1);
  Workload w;
  for (int b = 0; b < blocks; ++b) {
    BlockCost blk;
    blk.name = "b" + std::to_string(b);
    blk.forward_s = 1e-3 * (0.2 + 2 * u(rng));
    blk.backward_s = blk.forward_s * (1 + 1.5 * u(rng));
    blk.output_bytes = 1e4 * (1 + 200 * u(rng) * u(rng));
    blk.saved_bytes = blk.output_bytes * (1 + 4 * u(rng));
    blk.work_bytes = blk.output_bytes * 2 * u(rng);
    blk.param_bytes = u(rng) < 0.2 ? 0 : 1e5 * (1 + 50 * u(rng) * u(rng));
    w.blocks.push_back(blk);
  }
  w.input_bytes = 1e4 * (1 + 10 * u(rng));
  w.global_batch = global_batch;
  w.micro_batch_counts = std::move(micro_batch_counts);
  return w;
}

// Every block's forward and backward also pay a fixed time per micro-batch, up to a few samples' worth.
inline void add_fixed_times(Workload& w, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  for (BlockCost& b : w.blocks) {
    b.forward_fixed_s = 3 * u(rng) * b.forward_s;
    b.backward_fixed_s = 3 * u(rng) * b.backward_s;
  }
}

// Memory per device drawn around what an even split of the model would need (mean `tightness`).
inline Cluster random_cluster(int devices, const Workload& w, std::mt19937_64& rng, double tightness = 1.0) {
  std::uniform_real_distribution<double> u(0, 1);
  double state = 0, activations = 0;
  for (const BlockCost& b : w.blocks) state += w.state_per_param_byte * b.param_bytes, activations += b.saved_bytes;
  const double even = (state + double(w.global_batch) * activations) / devices;
  std::vector<ClusterRank> ranks;
  for (int r = 0; r < devices; ++r) {
    ClusterRank cr;
    cr.speed = 0.3 + 1.2 * u(rng);
    cr.memory_gb = tightness * even * (0.4 + 1.2 * u(rng)) / 1e9;
    ranks.push_back(cr);
  }
  std::vector<Link> matrix(size_t(devices) * size_t(devices));
  for (auto& l : matrix) l = Link{1 + 99 * u(rng) * u(rng), 50 * u(rng)};
  return Cluster(std::move(ranks), std::move(matrix));
}

}  // namespace dp::pipeline::testing
