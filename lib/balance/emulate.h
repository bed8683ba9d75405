// Emulated heterogeneity ([cluster.emulate]): the compute-time factor of a rank at a step, from persistent
// per-rank slowdowns, a window in which one rank is slower, a seeded random walk and, with as_described,
// the rank's speed in [cluster] (fastest speed / its speed). The trainer sleeps (factor - 1) x the rank's
// measured compute time, so an emulated slow rank takes no CPU from the others.
#pragma once

#include <cstdint>

#include "lib/job/job.h"

namespace dp {

class SlowdownEmulator {
 public:
  // [cluster.emulate] alone: as_described is not looked at (it needs the job's [cluster]).
  SlowdownEmulator(const EmulateSection& spec, int rank, uint64_t seed);
  // The whole job: with [cluster.emulate] as_described, the factors above times fastest speed / this
  // rank's speed, the speeds from cluster_from_job(job).
  SlowdownEmulator(const Job& job, int rank);
  bool active() const;
  // The factor (>= 1) of 0-based step `step`. Steps must be asked in increasing order (the random walk
  // advances; asking for an earlier step replays it from the start).
  double factor(int64_t step);
  // After a step's compute that took `compute_seconds`: sleeps (factor(step) - 1) times that, so the rank
  // is as slow as emulated while leaving its core to others. No-op when nothing is emulated.
  void delay(int64_t step, double compute_seconds);

 private:
  EmulateSection spec_;
  int rank_;
  uint64_t seed_;
  double described_ = 1;  // fastest speed / this rank's speed ([cluster] with as_described), else 1
  int64_t walk_step_ = -1;
  double walk_log_ = 0;  // the random walk's log factor at walk_step_
};

}  // namespace dp
