// SpeedFilter and Balancer: smoothing measured speeds and deciding when the division changes.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "lib/balance/balance.h"
#include "lib/core/error.h"

namespace dp {

void SpeedFilter::add(double measured) {
  if (!(measured > 0) || !std::isfinite(measured)) return;
  if (empty()) {
    value_ = measured;
    return;
  }
  const double rel = measured / value_ - 1.0;
  // A jump must stand out of the measurements' own noise: on a loaded machine steps vary by 30%, and
  // restarting the estimate on each pair of high ones would make the division follow the noise.
  const double jump = std::max(jump_, 2.5 * noise());
  const int dir = rel > jump ? 1 : rel < -jump ? -1 : 0;
  if (dir != 0 && (pending_.empty() || dir == direction_)) {
    pending_.push_back(measured);
    direction_ = dir;
  } else {
    for (double p : pending_) add_noise(p / value_ - 1.0);  // they were noise after all
    pending_.clear();
    direction_ = 0;
  }
  if (int(pending_.size()) >= confirm_) {  // a level shift, not noise: restart from the new level
    value_ = std::accumulate(pending_.begin(), pending_.end(), 0.0) / double(pending_.size());
    pending_.clear();
    direction_ = 0;
    settling_ = kSettlingSteps;
    return;
  }
  if (settling_ > 0 && dir == 0) {
    // Just after a restart: the level was measured on the division before it, and a share that moves
    // with the new division changes the per-sample time (fixed per-step costs weigh more on a small
    // share), so the next measurements are the level's correction, not noise.
    --settling_;
    value_ += kSettlingAlpha * (measured - value_);
    return;
  }
  if (dir == 0) add_noise(rel);
  value_ += alpha_ * (measured - value_);
}

void SpeedFilter::add_noise(double rel) {
  // Clipped, so a single outlier (a page fault) does not make every later jump look like noise.
  const double limit = std::max(jump_, 3.0 * noise());
  rel = std::clamp(rel, -limit, limit);
  variance_ += alpha_ * (rel * rel - variance_);
  ++noise_samples_;
}

double SpeedFilter::noise() const { return noise_samples_ >= 3 ? std::sqrt(variance_) : 0.0; }

double SpeedFilter::uncertainty() const { return noise() * std::sqrt(alpha_ / (2.0 - alpha_)); }

Balancer::Balancer(const BalanceOptions& options, int ranks)
    : options_(options), ranks_(ranks), filters_(size_t(ranks)), speeds_(size_t(ranks), 0.0),
      weights_(size_t(ranks), 1.0) {
  DP_CHECK(options.initial_speeds.empty() || options.initial_speeds.size() == size_t(ranks),
           "initial_speeds must give one speed per rank");
  if (options.mode == BalanceMode::idat && !options.initial_speeds.empty()) weights_ = options.initial_speeds;
}

void Balancer::resume_from(std::span<const double> weights) {
  if (options_.mode != BalanceMode::idat || weights.size() != size_t(ranks_)) return;
  if (std::any_of(weights.begin(), weights.end(), [](double w) { return !(w > 0) || !std::isfinite(w); })) return;
  weights_.assign(weights.begin(), weights.end());
}

std::vector<int64_t> Balancer::shares(int64_t batch) const {
  const int64_t min_share = std::min<int64_t>(options_.min_share, batch / ranks_);
  return divide_batch(batch, weights_, min_share, options_.max_share);
}

bool Balancer::observe(int64_t step, std::span<const int64_t> local_batch, std::span<const double> compute_seconds) {
  DP_CHECK(local_batch.size() == size_t(ranks_) && compute_seconds.size() == size_t(ranks_), "one value per rank");
  for (int r = 0; r < ranks_; ++r)
    if (local_batch[size_t(r)] > 0 && compute_seconds[size_t(r)] > 0)
      filters_[size_t(r)].add(double(local_batch[size_t(r)]) / compute_seconds[size_t(r)]);
  for (int r = 0; r < ranks_; ++r) speeds_[size_t(r)] = filters_[size_t(r)].value();
  if (options_.mode != BalanceMode::idat || options_.every < 1 || (step + 1) % options_.every != 0) return false;
  if (std::any_of(speeds_.begin(), speeds_.end(), [](double s) { return s <= 0; })) return false;

  // Adopt the division the smoothed speeds call for only if it is predicted to be clearly faster.
  int64_t total = 0;
  for (int64_t b : local_batch) total += b;
  if (total < ranks_) return false;
  const std::vector<int64_t> now = divide_batch(total, weights_, std::min<int64_t>(options_.min_share, total / ranks_),
                                                options_.max_share);
  const std::vector<int64_t> next = divide_batch(total, speeds_, std::min<int64_t>(options_.min_share, total / ranks_),
                                                 options_.max_share);
  if (next == now) return false;
  // The gain must beat the threshold and the estimates' own uncertainty (three standard deviations of
  // the noisiest smoothed speed): a division that only looks better by chance is no reason to change.
  double uncertainty = 0;
  for (const SpeedFilter& f : filters_) uncertainty = std::max(uncertainty, f.uncertainty());
  const double needed = std::max(options_.threshold, 3.0 * uncertainty);
  const double t_now = predicted_step_seconds(now, speeds_), t_next = predicted_step_seconds(next, speeds_);
  if (t_next >= t_now * (1.0 - needed)) return false;
  weights_ = speeds_;
  ++rebalances_;
  return true;
}

}  // namespace dp
