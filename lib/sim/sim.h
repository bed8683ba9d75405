// A discrete-event simulator of training steps, on the cost inputs the analytical models read
// (lib/estimate for data parallelism, lib/cgp for CGP's groups and server, lib/pipeline for a plan's
// stages), with what those closed forms average away: every rank's compute varies (noise per operation,
// a random walk of its slowness per step, a slow window that may move from rank to rank, as
// [cluster.emulate] emulates them); I-DAT re-divides the batch from the times it observes (the runtime's
// own Balancer, lib/balance); links are priced per ring phase with contention (flows leaving or entering
// one node share its link); a pipeline plays its 1F1B schedule every mini-batch (lib/pipeline/schedule.h);
// CGP's groups (data-parallel groups, or pipelines: CGP of pipelines) cycle asynchronously against one
// server whose interface takes pushes one at a time (a FIFO queue), and the staleness of every update
// is counted as it lands.
//
// Granularity (what keeps 10,000 workers fast): one event per rank's compute of a step, per group cycle
// and server request, per pipeline operation; a ring collective of n ranks is 2(n-1) phases that each
// move the same chunk over the same edges, so its phase is priced once (the slowest edge under
// contention) and the collective is one event of 2(n-1) phases. CGP's staleness bound is the runtime's hold
// (an update held back rather than let another group see too many).
//
// Pure and seeded: the same inputs and seed give the same result, bit for bit.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "lib/balance/balance.h"
#include "lib/balance/emulate.h"
#include "lib/cgp/cgp.h"
#include "lib/cluster/cluster.h"
#include "lib/core/rng.h"
#include "lib/estimate/estimate.h"
#include "lib/pipeline/plan.h"

namespace dp::sim {

// How compute times vary.
struct Variability {
  double noise = 0;        // every operation's time times exp(noise x N(0,1)) (0: exact)
  EmulateSection emulate;  // [cluster.emulate]'s random walk and slow window, as the runtime emulates them
                           //   (its persistent slowdowns and as_described are in the cluster's speeds)
};

// The slowness factor (>= 1) of every rank at every step, from the runtime's own emulator
// (lib/balance/emulate.h: the same walk for the same seed as a run has), and the noise of each operation.
class Slowness {
 public:
  Slowness(const Variability& v, int ranks, uint64_t seed);
  const std::vector<double>& at(int64_t step);  // steps asked in increasing order
  double noise();                               // one operation's factor
 private:
  double noise_;
  std::vector<SlowdownEmulator> ranks_;
  std::vector<double> factor_;
  int64_t step_ = -1;
  Rng rng_;
};

// Seconds of one ring phase over `ring` (in ring order) moving `chunk_bytes` on every edge at once: the
// slowest edge, where k flows leaving or entering one node share its link (k x the edge's time).
double ring_phase_seconds(const Cluster& c, const std::vector<int>& ring, double chunk_bytes);
// A ring allreduce of `bytes`: 2(k-1) phases of bytes / k.
double ring_allreduce_seconds(const Cluster& c, const std::vector<int>& ring, double bytes);

struct Result {
  std::vector<double> step_s;   // every step's time (CGP: the global batch over its samples/s in the
                                //   window of that step); pipeline: every mini-batch
  double median_step_s = 0, mean_step_s = 0;
  double samples_per_s = 0;     // samples over the simulated time
  double max_staleness = 0, mean_staleness = 0;  // CGP: updates landing between a group's read and write
  int64_t events = 0;
};

// Data parallelism: every rank computes its share, then the gradient exchange after backward, then the
// update; the step ends with the slowest rank.
struct DataSpec {
  std::function<double(int64_t samples)> compute_s;  // forward + backward of n samples at speed 1
  int64_t global_batch = 0;
  BalanceOptions balance;       // mode equal: fixed equal shares; idat: the runtime's Balancer
  double gradient_bytes = 0;    // 4 x parameters
  CommSection comm;             // how they are exchanged ([parallel.comm])
  double update_s = 0;          // the optimizer's update of the whole model (divided among MRA's shards)
};
Result simulate_data(const Cluster& c, const DataSpec& spec, const Variability& v, int64_t steps, uint64_t seed);

// CGP: groups of `grouping` under `workload` (lib/cgp's model terms: batch, I-DAT or equal shares inside,
// the ring allreduce, the exchange's pushes and pull, the all-gather after it).
Result simulate_cgp(const Cluster& c, const cgp::Workload& w, const cgp::Grouping& grouping, const Variability& v,
                    int64_t steps, uint64_t seed);

// A pipeline plan with its model's per-stage times (pipeline::evaluate): every mini-batch the 1F1B
// schedule played with each stage's forward and backward times varied (its slowest replica), each
// stage's allreduce and update after its last backward.
Result simulate_pipeline(const Cluster& c, const pipeline::Plan& plan, const pipeline::Prediction& p,
                         int64_t global_batch, const Variability& v, int64_t steps, uint64_t seed);

// CGP of pipelines on the estimate's terms (HybridGroup: each group's members, in the order the
// plan's stage ranks index, its model's per-stage times on the group's devices, its exchanges with the
// stages' shards): each group runs `plan`, exchanging every `exchange_every` mini-batches of
// `group_batch` samples, the leading stage's exchange then every other stage's, one group at a time,
// under the runtime's hold at `hold_staleness` (0: none).
struct HybridSpec {
  pipeline::Plan plan;
  std::vector<HybridGroup> groups;
  int64_t group_batch = 0, global_batch = 0, exchange_every = 1, hold_staleness = 0;
};
Result simulate_cgp_pipeline(const Cluster& c, const HybridSpec& spec, const Variability& v, int64_t steps,
                             uint64_t seed);

}  // namespace dp::sim
