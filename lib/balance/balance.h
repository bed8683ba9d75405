// I-DAT: heterogeneity-aware division of the global batch. Each rank's compute speed (samples per second
// of its own work in the step: its forward/backward and host work, excluding time spent waiting for
// others and communicating) is measured every step and
// smoothed; the global batch is divided in proportion to the smoothed speeds, in integers that sum exactly
// to it and respect per-rank limits, so that all ranks finish their compute together. The division
// changes only at a cadence and only when the predicted step time improves by more than a threshold.
//
// Pure functions and one small stateful object (Balancer): data in, a division out. No MPI here: the
// trainer gathers each rank's measurement and feeds every rank the same numbers, so every rank computes
// the same division.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lib/job/job_enums.h"

namespace dp {

// Integer shares of `total` in proportion to `speeds` (> 0), each within [min_share, max_share[r]]
// (max_share empty: no upper limit), summing exactly to `total`: the proportional real shares, clamped,
// then rounded by largest remainder (ties to the lower rank). Throws InputError when the limits cannot
// hold `total` (sum of minimums above it, or of maximums below it).
std::vector<int64_t> divide_batch(int64_t total, std::span<const double> speeds, int64_t min_share = 1,
                                  std::span<const int64_t> max_share = {});

// The compute time of one step under `shares`: the slowest rank's share / speed (seconds).
double predicted_step_seconds(std::span<const int64_t> shares, std::span<const double> speeds);

// Smooths one rank's measured speed. An exponentially weighted moving average (weight `alpha` on the
// newest sample) damps step-to-step noise, so steady speeds give a steady division (no oscillation);
// a level-shift detector makes it react within `confirm` steps to a real change: when that many
// consecutive measurements all differ from the estimate by more than `jump` (relative, same direction),
// the estimate restarts from their mean, and the next few measurements in line with it move it by half
// their difference each (they correct a level measured on the old division: fixed per-step costs make
// a rank's samples per second depend on its share). A single outlier (a page fault, a preempted step)
// is damped like noise and never restarts it.
class SpeedFilter {
 public:
  explicit SpeedFilter(double alpha = 0.1, double jump = 0.2, int confirm = 2)
      : alpha_(alpha), jump_(jump), confirm_(confirm) {}
  void add(double measured);  // samples per second, > 0
  double value() const { return value_; }
  bool empty() const { return value_ <= 0; }
  // The measurements' relative spread around the estimate (a standard deviation, smoothed like it; 0
  // until a few are in), and the estimate's own relative uncertainty that follows from it. A jump must
  // exceed 2.5 times the spread as well as `jump` to restart the estimate.
  double noise() const;
  double uncertainty() const;

 private:
  void add_noise(double relative_deviation);
  double alpha_, jump_;
  int confirm_;
  double value_ = 0;
  double variance_ = 0;  // of the relative deviations that were noise (level shifts excluded)
  int64_t noise_samples_ = 0;
  std::vector<double> pending_;  // consecutive measurements off the estimate in one direction
  int direction_ = 0;
  static constexpr int kSettlingSteps = 3;
  static constexpr double kSettlingAlpha = 0.5;
  int settling_ = 0;             // measurements left that settle a restarted estimate
};

struct BalanceOptions {
  BalanceMode mode = BalanceMode::equal;
  int64_t every = 1;           // consider a new division every this many steps
  double threshold = 0.03;     // ... and adopt it only if the predicted step time drops by this fraction
  int64_t min_share = 1;
  std::vector<int64_t> max_share;  // per rank (from memory); empty: none
  std::vector<double> initial_speeds;  // relative speeds known up front ([parallel.balance] speeds, else
                                       // [cluster]'s described speeds); empty: equal
};

// The division of every step of a run, the same on every rank given the same measurements. A new division
// is adopted when it is predicted faster by more than the threshold and than the speeds' uncertainty, so
// a settled division stays put under noisy measurements.
class Balancer {
 public:
  Balancer(const BalanceOptions& options, int ranks);
  // The shares of a step whose global batch is `batch` (the last batch of an epoch may be smaller):
  // the current division scaled to it (exactly the current one when batch is the full global batch).
  std::vector<int64_t> shares(int64_t batch) const;
  // After a step: every rank's local batch and compute seconds. Returns true when the division changed.
  bool observe(int64_t step, std::span<const int64_t> local_batch, std::span<const double> compute_seconds);
  std::span<const double> speeds() const { return speeds_; }  // smoothed, samples per second
  // The division's proportions (the speeds at the last change, or the initial ones): what a checkpoint
  // keeps, so a resumed run divides as the interrupted one did. `resume_from` takes them when they are
  // one per rank and positive (else keeps the initial division: another rank count starts afresh).
  std::span<const double> weights() const { return weights_; }
  void resume_from(std::span<const double> weights);
  int64_t rebalances() const { return rebalances_; }

 private:
  BalanceOptions options_;
  int ranks_;
  std::vector<SpeedFilter> filters_;
  std::vector<double> speeds_;
  std::vector<double> weights_;  // the division's proportions (speeds at the last rebalance)
  int64_t rebalances_ = 0;
};

}  // namespace dp
