// NonFiniteGuard (nonfinite.h): stop or undo a step whose loss is not finite.
#include "lib/train/step/nonfinite.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "lib/core/error.h"

namespace dp {

void NonFiniteGuard::before_step(std::span<const float> params, const Optimizer& opt) {
  if (!skip_) return;
  params_.assign(params.begin(), params.end());
  state_ = opt.state_to_host();
  optimizer_steps_ = opt.steps_taken();
}

bool NonFiniteGuard::after_step(int64_t step, double loss, Optimizer* opt) {
  if (std::isfinite(loss)) {
    in_a_row_ = 0;
    return true;
  }
  const std::string what = fmt::format("step {}: the training loss is {}", step, loss);
  if (!skip_)
    throw NonFiniteError("[train] on_nonfinite", what + "; the run stops here, its newest checkpoint is from before it",
                         "lower [optim] lr (or add warmup_steps), or set [train] on_nonfinite = \"skip\"", true);
  if (++in_a_row_ > kMaxSkipsInARow)
    throw NonFiniteError("[train] on_nonfinite",
                         fmt::format("{} after {} steps skipped in a row: the run stops here", what, kMaxSkipsInARow),
                         "lower [optim] lr, or resume from an earlier checkpoint", true);
  if (opt) {
    opt->state_from_host(state_);
    opt->set_steps_taken(optimizer_steps_);
  }
  return false;
}

double with_injected_fault(int64_t step, double loss) {
  static const int64_t nan_step = [] {
    const char* v = std::getenv("DPTRAIN_FAULT_NAN_STEP");
    return v ? std::atoll(v) : int64_t(-1);
  }();
  return step == nan_step ? std::nan("") : loss;
}

void check_finite_parameters(std::span<const float> params, int64_t step) {
  const auto bad = std::find_if(params.begin(), params.end(), [](float v) { return !std::isfinite(v); });
  if (bad != params.end())
    throw NonFiniteError("[train] on_nonfinite",
                         fmt::format("after step {}: parameter {} is {}; no checkpoint is written of it", step,
                                     bad - params.begin(), *bad),
                         "lower [optim] lr, or resume from the newest checkpoint", false);
}

}  // namespace dp
