// How each strategy scales (`dptrain plan JOB --compare --workers N[,N...] [--plot F.svg]`): for every
// worker count, the job's device kinds drawn to that many ranks (the global batch growing with them, so
// every rank keeps its share), every candidate of the comparison predicted by the one model and
// simulated (lib/sim, seeded, with per-operation noise and the job's emulated fluctuation), as a table,
// one JSON object, or an SVG chart of samples/s against workers per strategy.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/compare/compare.h"
#include "lib/estimate/estimate.h"

namespace dp::compare {

struct ScalingCell {
  bool planned = false;
  std::string error;          // why the strategy has no plan at this size (planned: why it has no simulation)
  bool fits = true;
  double predicted = 0;       // samples/s, the one model
  double simulated = 0;       // samples/s, lib/sim over `steps` steps
  double seconds = 0;         // planning and simulating it took here
};

struct Scaling {
  std::vector<std::string> strategies;  // candidate names
  std::vector<int64_t> workers;
  std::vector<std::vector<ScalingCell>> cells;  // [worker count][strategy]
  double noise = 0;
  int64_t steps = 0;
  uint64_t seed = 0;
  std::string timing_basis;
};

// The job at `workers` ranks drawn from its kinds; per-rank keys that name the job's own ranks are
// dropped ([parallel.cgp] groups, stages, balance speeds, a slowdown that differs between ranks; one
// every rank shares is kept for every rank).
// Throws UsageError (--workers) for a links matrix, which describes only the job's own ranks.
Job job_at(const Job& job, int64_t workers, uint64_t seed);

// Every candidate predicted and simulated at each worker count: the job itself at its own rank count,
// job_at(job, n, seed) at any other.
Scaling scale_strategies(const Job& job, const estimate::ModelFacts& facts, const estimate::Timing& timing,
                         const std::vector<int64_t>& workers, uint64_t seed, double noise, int64_t steps);

std::string scaling_text(const Scaling& s);
std::string scaling_json(const Scaling& s);
// samples/s (simulated) against workers, one line per strategy, log-log axes.
std::string scaling_svg(const Scaling& s, const std::string& title);

}  // namespace dp::compare
