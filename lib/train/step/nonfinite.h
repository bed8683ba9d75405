// [train] on_nonfinite: what a step whose training loss is not finite does. "stop": the run ends with a
// NonFiniteError naming the step. "skip": every rank undoes the step (parameters and optimizer state as
// before it, from a copy kept before each step) and the run goes on; 10 skips in a row stop it. The loss
// checked is the step's agreed one (every rank the same), so every rank decides alike.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lib/job/job.h"
#include "lib/optim/optimizer.h"

namespace dp {

class NonFiniteGuard {
 public:
  static constexpr int64_t kMaxSkipsInARow = 10;

  explicit NonFiniteGuard(const Job& job) : skip_(job.train.on_nonfinite == OnNonfinite::skip) {}
  // Whether steps are undone rather than stopping the run (a copy is then kept before each step).
  bool skips() const { return skip_; }
  // Before a step, skip mode: keeps `params` (final: settled) and this rank's optimizer state.
  void before_step(std::span<const float> params, const Optimizer& opt);
  // After step `step` (1-based), with its agreed loss: true when the step stands. A non-finite loss
  // throws NonFiniteError in stop mode (and after kMaxSkipsInARow skips in a row); in skip mode it
  // restores `opt` (when given: a rank that trains nothing has none) and returns false: the caller then
  // puts kept_params() back.
  bool after_step(int64_t step, double loss, Optimizer* opt);
  std::span<const float> kept_params() const { return params_; }

 private:
  bool skip_;
  std::vector<float> params_, state_;
  int64_t optimizer_steps_ = 0, in_a_row_ = 0;
};

// Fault injection for tests: with DPTRAIN_FAULT_NAN_STEP=S in the environment, the loss a rank reports
// for step S is NaN, as after an overflow; `loss` otherwise.
double with_injected_fault(int64_t step, double loss);

// Before a checkpoint is written (rank 0): throws NonFiniteError when a parameter is not finite.
void check_finite_parameters(std::span<const float> params, int64_t step);

}  // namespace dp
