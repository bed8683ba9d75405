// SlowdownEmulator: persistent, windowed, random-walk and described ([cluster] speeds) slowdowns of one rank.
#include "lib/balance/emulate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include <time.h>

#include "lib/cluster/cluster.h"
#include "lib/core/rng.h"

namespace dp {

SlowdownEmulator::SlowdownEmulator(const EmulateSection& spec, int rank, uint64_t seed, int64_t ranks)
    : spec_(spec), rank_(rank), ranks_(ranks), seed_(seed) {}

SlowdownEmulator::SlowdownEmulator(const Job& job, int rank)
    : SlowdownEmulator(job.cluster.emulate, rank, job.job.seed, job.launch.ranks) {
  if (!spec_.as_described) return;
  const std::vector<double> speeds = cluster_from_job(job).speeds();
  if (size_t(rank) >= speeds.size()) return;
  const double fastest = *std::max_element(speeds.begin(), speeds.end());
  described_ = std::max(1.0, fastest / speeds[size_t(rank)]);
}

EmulatedMemory emulated_memory(const Job& job, int rank) {
  const std::vector<double>& given = job.cluster.emulate.memory_gb;
  if (!given.empty()) {
    const double gb = given.size() == 1 ? given.front() : size_t(rank) < given.size() ? given[size_t(rank)] : 0;
    return {int64_t(gb * 1e9), "[cluster.emulate] memory_gb"};
  }
  if (!job.cluster.emulate.as_described) return {};
  const Cluster c = cluster_from_job(job);
  if (rank >= c.size() || !(c.rank(rank).memory_gb > 0)) return {};
  return {int64_t(c.rank(rank).memory_gb * 1e9),
          job.cluster.memory_gb.empty() ? "[cluster] kind_memory_gb" : "[cluster] memory_gb"};
}

double fastest_emulated_factor(const Job& job) {
  double least = 0;
  for (int r = 0; r < std::max<int>(1, int(job.launch.ranks)); ++r) {
    const double f = SlowdownEmulator(job, r).factor(0);
    least = r == 0 ? f : std::min(least, f);
  }
  return least;
}

bool SlowdownEmulator::active() const {
  const bool persistent = size_t(rank_) < spec_.slowdown.size() && spec_.slowdown[size_t(rank_)] > 1.0;
  const bool window = spec_.fluctuate_rank >= 0 && spec_.fluctuate_factor > 1.0 &&
                      (spec_.fluctuate_rank == rank_ || spec_.fluctuate_move_every > 0);
  return persistent || described_ > 1.0 || window || spec_.random_walk > 0;
}

// The rank the window slows at `step` (inside the window): fluctuate_rank, moved on by one every
// fluctuate_move_every steps, wrapping around after the job's last rank.
int64_t SlowdownEmulator::slowed_rank(int64_t step) const {
  if (spec_.fluctuate_move_every <= 0) return spec_.fluctuate_rank;
  const int64_t moved = spec_.fluctuate_rank + (step - spec_.fluctuate_from) / spec_.fluctuate_move_every;
  return ranks_ > 0 ? moved % ranks_ : moved;
}

double SlowdownEmulator::factor(int64_t step) {
  double f = described_ * (size_t(rank_) < spec_.slowdown.size() ? spec_.slowdown[size_t(rank_)] : 1.0);
  if (step >= spec_.fluctuate_from && step < spec_.fluctuate_to && slowed_rank(step) == rank_)
    f *= spec_.fluctuate_factor;
  if (spec_.random_walk > 0) {
    if (step < walk_step_) {  // replay from the start
      walk_step_ = -1;
      walk_log_ = 0;
    }
    while (walk_step_ < step) {
      ++walk_step_;
      Rng rng(derive_seed(seed_, uint64_t(walk_step_), 0x77616c6bull + uint64_t(rank_)));
      walk_log_ = std::max(0.0, walk_log_ + spec_.random_walk * rng.normal());  // reflected at factor 1
    }
    f *= std::exp(walk_log_);
  }
  return std::max(1.0, f);
}

namespace {
double wall_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
double thread_cpu_now() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}
}  // namespace

ComputeTimer::ComputeTimer(bool thread_cpu)
    : thread_cpu_(thread_cpu), wall0_(wall_now()), cpu0_(thread_cpu ? thread_cpu_now() : 0) {}
double ComputeTimer::wall_seconds() const { return wall_now() - wall0_; }
double ComputeTimer::cpu_seconds() const { return thread_cpu_ ? thread_cpu_now() - cpu0_ : -1; }

double SlowdownEmulator::least_compute(int kind, int64_t work, double measured) {
  const auto [it, fresh] = least_.try_emplace({kind, work}, measured);
  double least = fresh ? measured : std::min(it->second, measured);
  if (const auto up = std::next(it); up != least_.end() && up->first.first == kind)
    least = std::min(least, up->second);
  if (it != least_.begin()) {
    const auto down = std::prev(it);
    if (down->first.first == kind && down->first.second > 0)
      least = std::min(least, down->second * double(work) / double(down->first.second));
  }
  return it->second = least;
}

void SlowdownEmulator::pace(int64_t step, double wall_seconds, double cpu_seconds, int64_t work, int kind) {
  if (!active() || cpu_seconds < 0) return;
  double done = cpu_seconds;
  // On the least's time line: the part done is the share of the whole that the last run of this work
  // had done by now (a step whose CPU times run high is not charged them, as delay() does not).
  const auto least = least_.find({kind, work});
  const auto last = last_.find({kind, work});
  if (work >= 0 && least != least_.end() && last != last_.end() && last->second > 0)
    done = least->second * std::min(1.0, cpu_seconds / last->second);
  const double rest = factor(step) * done - wall_seconds;
  if (rest > 0) std::this_thread::sleep_for(std::chrono::duration<double>(rest));
}

void SlowdownEmulator::delay(int64_t step, double wall_seconds, double cpu_seconds, int64_t work, int kind) {
  if (!active()) return;
  double compute = cpu_seconds >= 0 ? cpu_seconds : wall_seconds;
  if (work >= 0) {
    last_[{kind, work}] = compute;
    compute = least_compute(kind, work, compute);
  }
  const double rest = factor(step) * compute - wall_seconds;
  if (rest > 0) std::this_thread::sleep_for(std::chrono::duration<double>(rest));
}

}  // namespace dp
