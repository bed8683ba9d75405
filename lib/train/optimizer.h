// Optimizers over the flat parameter buffer. Their state lives in one buffer too (momentum for SGD,
// first and second moments for AdamW), so it can be checkpointed and, later, sharded by offset. They run
// on the model's kernel table: parameters, gradients and state all live in that backend's memory.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kernels/kernel_table.h"
#include "lib/job/job.h"
#include "models/buffer.h"

namespace dp {

class Optimizer {
 public:
  Optimizer(const Kernels& k, size_t state_count) : k_(k), state_(k, state_count) { state_.zero(); }
  virtual ~Optimizer() = default;
  virtual std::string name() const = 0;
  // One update of all parameters with learning rate lr.
  virtual void step(std::span<float> params, std::span<const float> grads, double lr) = 0;
  // Everything a checkpoint must hold to continue exactly: the state buffer and the step count.
  std::span<float> state() { return state_.span(); }  // in the backend's memory
  std::vector<float> state_to_host() const { return state_.to_host(); }
  void state_from_host(std::span<const float> host) { state_.upload(host); }
  int64_t steps_taken() const { return steps_; }
  void set_steps_taken(int64_t s) { steps_ = s; }

 protected:
  const Kernels& k_;
  Buffer<float> state_;
  int64_t steps_ = 0;
};

std::unique_ptr<Optimizer> make_optimizer(const OptimSection& spec, int64_t param_count,
                                          const Kernels& k = cpu_kernels());

// Learning rate for 0-based step `step` of `total_steps`: linear warmup over warmup_steps (from lr/warmup
// to lr), then constant, step decay (gamma every step_size steps) or cosine decay to min_lr.
double learning_rate(const OptimSection& spec, int64_t step, int64_t total_steps);

}  // namespace dp
