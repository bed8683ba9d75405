// SGD with momentum and AdamW over flat buffers, and learning-rate schedules.
#include "lib/optim/optimizer.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

#include "lib/core/error.h"

namespace dp {
namespace {

class Sgd final : public Optimizer {
 public:
  Sgd(const OptimSection& s, int64_t n, const Kernels& k) : Optimizer(k, 1, n), spec_(s) {}  // velocity
  std::string name() const override { return "sgd"; }
  void update_range(float* p, const float* g, int64_t at, int64_t count, double lr, int64_t /*step*/) override {
    DP_CHECK(at >= 0 && at + count <= state_count_, "state range out of bounds");
    k_.sgd_momentum_update(p, g, state_.data() + at, count, float(lr), float(spec_.momentum),
                           float(spec_.weight_decay));
  }

 private:
  OptimSection spec_;
};

class AdamW final : public Optimizer {
 public:
  AdamW(const OptimSection& s, int64_t n, const Kernels& k) : Optimizer(k, 2, n), spec_(s) {}  // m, v
  std::string name() const override { return "adamw"; }
  void update_range(float* p, const float* g, int64_t at, int64_t count, double lr, int64_t step) override {
    DP_CHECK(at >= 0 && at + count <= state_count_, "state range out of bounds");
    float* m = state_.data() + at;
    float* v = state_.data() + state_count_ + at;
    k_.adamw_update(p, g, m, v, count, float(lr), float(spec_.beta1), float(spec_.beta2), float(spec_.eps),
                    float(spec_.weight_decay), step);
  }

 private:
  OptimSection spec_;
};

}  // namespace

std::unique_ptr<Optimizer> make_optimizer(const OptimSection& spec, int64_t state_count, const Kernels& k) {
  switch (spec.name) {
    case OptimizerKind::sgd: return std::make_unique<Sgd>(spec, state_count, k);
    case OptimizerKind::adamw: return std::make_unique<AdamW>(spec, state_count, k);
  }
  throw std::logic_error("make_optimizer: an OptimizerKind without a case");
}

double learning_rate(const OptimSection& s, int64_t step, int64_t total_steps) {
  if (step < s.warmup_steps) return s.lr * double(step + 1) / double(s.warmup_steps);
  const int64_t t = step - s.warmup_steps;
  switch (s.schedule) {
    case LrSchedule::constant: return s.lr;
    case LrSchedule::step: return s.lr * std::pow(s.gamma, double(t / s.step_size));
    case LrSchedule::cosine: {
      const int64_t span = std::max<int64_t>(1, total_steps - s.warmup_steps);
      const double progress = std::min(1.0, double(t) / double(span));
      return s.min_lr + (s.lr - s.min_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
    }
  }
  throw std::logic_error("learning_rate: an LrSchedule without a case");
}

}  // namespace dp
