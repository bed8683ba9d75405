// A model is an ordered list of blocks (models/block.h) over one flat parameter buffer and one flat
// gradient buffer (per-block views are offsets into them), so collectives, optimizers and checkpoints work
// on flat ranges. Each block reports its parameters, activations and FLOPs for the planners, and its
// layers: the model's layer table, fingerprint, hook ranges and FLOP count are read from the blocks, the
// one description of the architecture. A model runs on the kernel table it is built with
// (kernels/kernel_table.h): its buffers live in that backend's memory, and batches (host memory) are
// copied there when it is not the host's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kernels/kernel_table.h"
#include "lib/core/batch.h"
#include "lib/core/param_range.h"
#include "lib/job/job.h"
#include "models/block.h"
#include "models/buffer.h"
#include "models/model_shape.h"
#include "models/param_init.h"

namespace dp {

// How one pass of Model::forward_backward leaves the gradients: overwritten, or added to (accumulate: a
// step's later micro-batches), and whether they are final after it (last: the hook announces them).
struct GradPass {
  bool accumulate = false;
  bool last = true;
};

class Model {
 public:
  explicit Model(const Kernels& k)
      : k_(k), scratch_(k), params_(k), grads_(k), block_saved_(k), block_dx_a_(k), block_dx_b_(k),
        block_rebuilt_(k) {}
  virtual ~Model() = default;

  virtual std::string type() const = 0;
  const Kernels& kernels() const { return k_; }
  // The blocks' layers, in order (models/block.h).
  std::vector<LayerInfo> layers() const;
  // The model as blocks, in order (models/block.h): what a pipeline stage runs (models/stage.h).
  int block_count() const { return int(blocks_.size()); }
  Block& block(int i) { return *blocks_[size_t(i)]; }
  const Block& block(int i) const { return *blocks_[size_t(i)]; }
  // In the backend's memory: host memory on the CPU (read and write them freely), device memory on a GPU
  // (pass them to kernels and collectives; use the *_to_host / params_from_host copies to look inside).
  std::span<float> params() { return params_.span(); }
  std::span<const float> params() const { return params_.span(); }
  std::span<float> grads() { return grads_.span(); }
  std::vector<float> params_to_host() const { return params_.to_host(); }
  std::vector<float> grads_to_host() const { return grads_.to_host(); }
  void params_from_host(std::span<const float> host);
  // Whether it holds its parameters and gradients (a model built to run as pipeline stages does not: each
  // stage holds its own blocks', models/stage.h). One that does not still describes, sizes and
  // fingerprints itself, and its blocks run on a stage's parameters; forward_backward and evaluate need them.
  bool holds_parameters() const { return params_.size() > 0 || parameter_count_ == 0; }
  int64_t parameter_count() const { return parameter_count_; }
  // The initial values of parameters [begin, end), the same as the whole model's there (param_init.h).
  std::vector<float> initial_params(int64_t begin, int64_t end) const;
  // Frees the blocks' shared working memory (it grows again as they run): after timing them at another
  // micro-batch size, so what a stage then allocates is counted under its meter at its own size.
  void release_working_memory() { scratch_.release(); }

  // Called during forward_backward whenever the gradients of [offset, parameter count) have become final
  // (backward runs from the last layer to the first, and parameters are laid out in forward order), with
  // offsets decreasing to 0, so gradient communication can start before backward ends. On a GPU, "final"
  // means the kernels that write them are queued on the default stream.
  using GradientsReady = std::function<void(int64_t offset)>;
  void on_gradients_ready(GradientsReady hook) { gradients_ready_ = std::move(hook); }
  // Called during the forward pass before a layer reads its parameters, with the end of all parameters
  // read so far (increasing to the parameter count): returns once [0, end) is final, so the previous
  // step's parameters can still be arriving while the first layers compute.
  using ParametersNeeded = std::function<void(int64_t end)>;
  void on_parameters_needed(ParametersNeeded hook) { parameters_needed_ = std::move(hook); }

  // Wide layers of models that can (the MLP's) run in slices of about `floats` parameters, each announced
  // to the hooks on its own, so that communicating one slice overlaps computing the next; 0 (the default)
  // runs whole layers. The arithmetic is the same either way, up to rounding.
  void set_hook_slice(int64_t floats) { hook_slice_ = floats; }
  // The ranges the hooks announce, in forward order, covering every parameter: the blocks' (their layers
  // with parameters, or their slices). Communication buckets are planned over these.
  std::vector<ParamRange> hook_ranges() const;

  // Forward and backward on a batch. Overwrites grads() with loss_scale * d(sum of loss terms)/d(params);
  // b.n may be 0 (gradients become zero). With micro_batch > 0 the batch runs in micro-batches of at most
  // that many samples, one after the other (the last may be smaller), each one's gradients added to the
  // previous ones': the same sums up to float rounding, with the activations of one micro-batch at a
  // time. The gradients-ready hook hears only the last micro-batch's backward (the others' gradients are
  // not final), so gradient communication still runs once, overlapping the last backward.
  StepStats forward_backward(const Batch& b, float loss_scale, int64_t micro_batch = 0);
  // Activation recomputation per block (recompute[i] for block i; shorter: the rest not recomputed): a
  // recomputed block keeps only its input during forward_backward's forward and runs its forward again,
  // just before its backward, to rebuild what its backward reads. The same arithmetic, bit for bit; less
  // memory (one block's saved activations at a time for them all), one more forward of those blocks.
  void set_recompute(std::vector<bool> recompute);
  // [train] recompute: every block recomputed ("all") or none.
  void set_recompute(TrainRecompute which) {
    set_recompute(std::vector<bool>(size_t(block_count()), which == TrainRecompute::all));
  }
  bool recomputes(int block) const { return size_t(block) < recompute_.size() && recompute_[size_t(block)]; }
  // Forward only.
  virtual StepStats evaluate(const Batch& b) = 0;
  // The most samples evaluate() runs through the blocks at once (0: the whole batch).
  virtual int64_t evaluation_chunk() const { return 0; }
  // Loss terms per sample: 1 for classifiers, the context length for language models.
  virtual int64_t targets_per_sample() const { return 1; }
  // Forward FLOPs of one sample (sum over the layers); backward costs about twice this.
  double flops_per_sample() const;

  // Identifies the architecture (type, the input dimensions the parameters do not show, and each layer's
  // kind and parameter count), not the values: checkpoints must match it. Activation sizes stay out, so
  // correcting how they are counted does not orphan checkpoints.
  uint64_t fingerprint() const;
  // "mlp: 784-256-128-10, 235,146 parameters".
  virtual std::string describe() const = 0;
  // Its shape (models/model_shape.h), read from the built model: what model_shape() gives without it.
  ModelShape shape() const;

 protected:
  // Forward and backward of b.n >= 1 samples as `pass` says: what forward_backward runs per micro-batch.
  virtual StepStats forward_backward_pass(const Batch& b, float loss_scale, GradPass pass) = 0;
  // Input dimensions that shape the model without showing in its parameter counts (a CNN's image size).
  virtual std::vector<int64_t> unparameterised_input() const { return {}; }
  void gradients_ready(int64_t offset) {
    if (gradients_ready_) gradients_ready_(offset);
  }
  void parameters_needed(int64_t end) {
    if (parameters_needed_) parameters_needed_(end);
  }
  // The one-stage run of blocks_ over n samples (x or tokens in the backend's memory; targets the
  // head's): forward, and with `backward` the loss gradient scaled by loss_scale back through every
  // block, gradients overwritten or added to as `pass` says, the parameters-needed hook honoured and the
  // gradients-ready hook on the last pass, recomputed blocks rebuilt before their backward. What
  // forward_backward_pass and evaluate do.
  StepStats run_blocks(const float* x, const int32_t* tokens, const int32_t* targets, int64_t n, float loss_scale,
                       bool backward, GradPass pass = {});
  // The parameters' initialisation, tensor by tensor, over `count` parameters; with `hold` the parameter
  // and gradient buffers allocated (gradients zero) and the parameters initialised.
  void set_parameters(int64_t count, std::vector<TensorInit> init, bool hold);
  // Before a model of `count` parameters allocates them: refuses (JobError naming what fits) one whose
  // parameters, gradients and optimizer state cannot fit in the host memory available. `what`: the model.
  void check_fits(int64_t count, const std::string& what) const;
  // A batch's arrays where this backend's kernels can read them: the host pointer itself on the CPU, or
  // a copy in `staging` (grown as needed).
  template <class T>
  const T* stage(const T* host, int64_t count, Buffer<T>& staging) const {
    if (k_.host_memory || count == 0) return host;
    staging.grow(size_t(count));
    staging.upload(std::span<const T>(host, size_t(count)));
    return staging.data();
  }

  const Kernels& k_;
  Scratch scratch_;  // the blocks' working memory (before blocks_: they refer to it)
  std::vector<std::unique_ptr<Block>> blocks_;
  int64_t hook_slice_ = 0;
  int64_t fixed_floats_ = 0;  // the buffers it holds besides parameters and gradients (ModelShape)
  int64_t parameter_count_ = 0;
  std::vector<TensorInit> init_;
  Buffer<float> params_;
  Buffer<float> grads_;
  std::vector<Buffer<float>> block_outs_;  // run_blocks: each block's output
  Buffer<float> block_saved_, block_dx_a_, block_dx_b_;
  Buffer<float> block_rebuilt_;  // run_blocks: a recomputed block's saved activations, for its backward
  std::vector<bool> recompute_;

 private:
  GradientsReady gradients_ready_;
  ParametersNeeded parameters_needed_;
};

// Builds the model [model] describes for samples of `shape`, running on the kernels `k`; parameters are
// initialised deterministically from `seed` (the same on every rank and every backend), and held unless
// `hold_parameters` is false (pipeline ranks: their stages hold theirs). Throws JobError when the model does
// not fit the data or its options do not fit together.
std::unique_ptr<Model> make_model(const ModelSection& spec, const SampleShape& shape, uint64_t seed,
                                  const Kernels& k = cpu_kernels(), bool hold_parameters = true);

}  // namespace dp
