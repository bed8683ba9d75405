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
#include "lib/core/error.h"
#include "lib/job/job.h"
#include "models/buffer.h"

namespace dp {

class Optimizer {
 public:
  // `slots` state values per element (1 for SGD's velocity, 2 for AdamW's moments), for `state_count`
  // elements: all parameters, or only the shards this rank updates (MRA's sharded update). State is slot
  // major: slot s of element i at state()[s * state_count + i].
  Optimizer(const Kernels& k, int slots, int64_t state_count)
      : k_(k), state_(allocate_state(k, slots, state_count)), slots_(slots), state_count_(state_count) {
    state_.zero();
  }
  virtual ~Optimizer() = default;
  virtual std::string name() const = 0;

  // One update of all state_count parameters with learning rate lr.
  void step(std::span<float> params, std::span<const float> grads, double lr) {
    DP_CHECK(int64_t(params.size()) == state_count_ && grads.size() == params.size(), "buffer sizes differ");
    update_range(params.data(), grads.data(), 0, state_count_, lr, begin_step());
  }
  // A step in pieces (sharded updates): begin_step() once, which returns the step's number (from 1), then
  // update_range with that number for every range this rank owns; a range's state starts at element
  // state_offset. Ranges of one step may run on other threads, and after the next step has begun.
  int64_t begin_step() { return ++steps_; }
  virtual void update_range(float* params, const float* grads, int64_t state_offset, int64_t count, double lr,
                            int64_t step) = 0;

  // Everything a checkpoint must hold to continue exactly: the state buffer and the step count.
  std::span<float> state() { return state_.span(); }  // in the backend's memory
  std::vector<float> state_to_host() const { return state_.to_host(); }
  void state_from_host(std::span<const float> host) { state_.upload(host); }
  int64_t state_count() const { return state_count_; }
  int slots() const { return slots_; }
  int64_t steps_taken() const { return steps_; }
  void set_steps_taken(int64_t s) { steps_ = s; }

 protected:
  static Buffer<float> allocate_state(const Kernels& k, int slots, int64_t state_count) {
    const MemoryUse use("optimizer state");
    return Buffer<float>(k, size_t(slots) * size_t(state_count));
  }

  const Kernels& k_;
  Buffer<float> state_;
  int slots_;
  int64_t state_count_;
  int64_t steps_ = 0;
};

// An optimizer whose state covers `state_count` parameters (see Optimizer).
std::unique_ptr<Optimizer> make_optimizer(const OptimSection& spec, int64_t state_count,
                                          const Kernels& k = cpu_kernels());

// Learning rate for 0-based step `step` of `total_steps`: linear warmup over warmup_steps (from lr/warmup
// to lr), then constant, step decay (gamma every step_size steps) or cosine decay to min_lr.
double learning_rate(const OptimSection& spec, int64_t step, int64_t total_steps);

}  // namespace dp
