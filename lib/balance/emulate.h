// Emulated heterogeneity ([cluster.emulate]): the compute-time factor of a rank at a step, from persistent
// per-rank slowdowns, a window in which one rank is slower (or the slowness moves from rank to rank), a
// seeded random walk and, with as_described,
// the rank's speed in [cluster] (fastest speed / its speed). After a step's compute the trainer sleeps
// until the step has taken factor x its compute time, so an emulated slow rank takes no CPU from the
// others. The compute time is the computing thread's CPU time where that is the whole of it (one compute
// thread on the CPU): time the thread spent descheduled, because ranks share the cores here, is then not
// multiplied into the emulated machine's time; elsewhere (GPUs, a pool of BLAS threads) the wall time.
// Where the caller names the work (the same number for the same computation), the compute time is the
// least seen for that work: a rank that sleeps most of its time wakes to caches other ranks have used
// and a core that idled, which inflates its next compute (1.05-1.5x measured on the quickstart MLP at
// factor 6); a slower device has neither, and multiplying the inflation by the factor would emulate a
// slower device than described. The least is still a rested compute's, above a hot loop's; a layer
// profile of an emulated job is scaled to a whole step timed resting the same way
// (fastest_emulated_factor, layer_profile.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <map>
#include <utility>

#include "lib/job/job.h"

namespace dp {

// The wall and (where it stands for the compute) CPU time of a compute interval, for delay().
class ComputeTimer {
 public:
  // `thread_cpu`: the compute runs on this thread alone (one compute thread on the CPU).
  explicit ComputeTimer(bool thread_cpu);
  double wall_seconds() const;
  double cpu_seconds() const;  // < 0 when not thread_cpu

 private:
  bool thread_cpu_;
  double wall0_, cpu0_;
};

class SlowdownEmulator {
 public:
  // [cluster.emulate] alone: as_described is not looked at (it needs the job's [cluster]); a moving
  // window wraps after `ranks` ranks (0: never).
  SlowdownEmulator(const EmulateSection& spec, int rank, uint64_t seed, int64_t ranks = 0);
  // The whole job: with [cluster.emulate] as_described, the factors above times fastest speed / this
  // rank's speed, the speeds from cluster_from_job(job).
  SlowdownEmulator(const Job& job, int rank);
  bool active() const;
  // The factor (>= 1) of 0-based step `step`. Steps must be asked in increasing order (the random walk
  // advances; asking for an earlier step replays it from the start).
  double factor(int64_t step);
  int64_t slowed_rank(int64_t step) const;  // the rank the fluctuation window slows at `step`
  // After a step's compute that took `wall_seconds`, of which the computing thread ran `cpu_seconds`
  // (< 0: unknown, use the wall time): sleeps until the compute has taken factor(step) x cpu_seconds, so
  // the rank is as slow as emulated while leaving its core to others. `work` >= 0 is the computation's
  // amount (its samples or rows) and `kind` which computation it is (forward, backward, ...): the least
  // compute time seen for it is multiplied instead, bounded by what the same kind took on other amounts
  // (least_compute). No-op when nothing is emulated.
  void delay(int64_t step, double wall_seconds, double cpu_seconds = -1, int64_t work = -1, int kind = 0);
  // Partway through that compute (its gradients handed on as they become final): sleeps until the part
  // done so far has taken factor(step) x its time, so what the compute hands on is not ready before a
  // device that slow would have it (MRA's buckets do not start before the slow backward has made them).
  // The part's time is on the least's time line: the least times the fraction of its CPU time the
  // last run of the same work had spent by then (no history: the CPU time itself).
  void pace(int64_t step, double wall_seconds, double cpu_seconds, int64_t work = -1, int kind = 0);

 private:
  EmulateSection spec_;
  int rank_;
  int64_t ranks_ = 0;  // the job's ranks (a moving window wraps there); 0: unknown, it never wraps
  uint64_t seed_;
  double described_ = 1;  // fastest speed / this rank's speed ([cluster] with as_described), else 1
  int64_t walk_step_ = -1;
  double walk_log_ = 0;  // the random walk's log factor at walk_step_
  // The least compute seconds of `work` of `kind`, this one taking `measured`: the least seen for it, and
  // no more than a larger amount of the same kind took, nor than a smaller one took per unit (fixed
  // costs spread thinner over more). A share seen for the first time (I-DAT moves shares) is then not
  // charged its first, cold run's time, which the factor would multiply.
  double least_compute(int kind, int64_t work, double measured);
  std::map<std::pair<int, int64_t>, double> least_;  // (kind, work) -> the least compute seconds for it
  std::map<std::pair<int, int64_t>, double> last_;   // (kind, work) -> its last run's compute seconds
};

// Emulated device memory ([cluster.emulate] memory_gb, or with as_described [cluster]'s memory) of
// `rank`: its bytes (0: no limit) and the key that sets it, for the memory meter's capacity.
struct EmulatedMemory {
  int64_t bytes = 0;
  std::string key;
};
EmulatedMemory emulated_memory(const Job& job, int rank);

// The least factor any of the job's ranks computes at, at step 0 (1 when nothing is emulated): the
// emulated fastest device, whose rests between computations a layer profile of the job imitates.
double fastest_emulated_factor(const Job& job);

}  // namespace dp
