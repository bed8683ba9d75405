// measure_block_profile (layer_profile.h): the model's blocks run one after another as in a one-stage
// pipeline, one block's memory at a time, each forward and backward timed on its own (the device
// synchronised around it; on the CPU with one compute thread, that thread's CPU time), at the
// micro-batch asked for, at an eighth of it and at four times it (up to the global batch: the largest
// micro-batch a pipeline stage may take), the line through them giving each time's fixed part; the
// job's optimizer updating each block's parameters; and a whole step of the model held whole beside its
// blocks.
// A job that emulates slow devices ([cluster.emulate]) gets every time scaled to its ranks' steps: the
// whole step timed resting as its fastest emulated rank rests after each (rest_as_emulated), against
// back to back.
#include "lib/measure/layer_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <thread>

#include "kernels/cpu/ops.h"
#include "lib/core/backend.h"
#include "lib/balance/emulate.h"
#include "lib/core/error.h"
#include "lib/data/dataset.h"
#include "lib/optim/optimizer.h"
#include "lib/measure/device.h"
#include "models/model.h"

namespace dp {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The most samples a profile of n samples times its blocks at: four times n, at most the global batch
// and the data's samples (n itself when that is no more).
int64_t profile_many_samples(const Job& job, int64_t n, int64_t available) {
  return std::max(n, std::min({4 * n, job.train.global_batch, available}));
}

// After a computation of `ms` timed as an emulated rank of `factor` runs it: the rest the slowdown
// emulator takes after it, (factor - 1) x its time. A rank that rests most of its time computes from
// caches other processes have used and a core that idled, and the emulator's least compute time keeps
// that (the quickstart MLP's blocks at 256 samples took 2.89-2.97 ms resting at factor 12 against
// 2.58-2.63 ms back to back, one process or four at once; its emulated ranks' compute 2.99 ms). No rest
// at factor 1.
void rest_as_emulated(double factor, double ms) {
  if (factor > 1) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>((factor - 1) * ms));
}

struct BlockTimes {
  std::vector<double> forward_ms, backward_ms;  // per block, the median of `steps`
  std::vector<double> update_ms;                // per block (when asked for), the median of `steps`
};

// The parameters a block reads: its own, and the ones it shares (a tied LM head reads the embedding's),
// as one window of the flat parameters.
std::pair<int64_t, int64_t> window_of(const BlockShape& s) {
  int64_t begin = s.param_offset, end = s.param_offset + s.param_count;
  if (s.shared_count > 0) {
    begin = std::min(begin, s.shared_offset);
    end = std::max(end, s.shared_offset + s.shared_count);
  }
  return {begin, end};
}

// The model's blocks one at a time on the first n samples of `data` (as a one-stage pipeline): each
// block's parameters (initial values), gradients and activations allocated for it alone and freed after
// it, so the profile never holds more than one block of a model that may not fit whole. Each forward
// and backward timed on its own, the device synchronised around it; a block's backward gets its own
// output as the gradient from above (the head its loss's). With `updates`, also the job's optimizer
// updating the block's parameters (its own state; lr 0, the parameters stay).
BlockTimes time_blocks(const Job& job, Model& model, const Dataset& data, int64_t n, int steps, int warmup,
                       bool updates) {
  const Kernels& k = model.kernels();
  const SampleShape shape = data.shape();
  const bool text = shape.is_text();
  std::vector<uint32_t> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), 0u);
  BatchBuffer host;
  const Batch b = gather_batch(data, idx, host);
  const int64_t per_target = text ? shape.context : 1;
  Buffer<float> in(k, size_t(text ? 0 : n * shape.features)), out(k), saved(k), dx(k);
  Buffer<int32_t> tokens(k, size_t(text ? n * shape.context : 0)), targets(k, size_t(n * per_target));
  if (!text) in.upload(std::span<const float>(b.x, size_t(n * shape.features)));
  else tokens.upload(std::span<const int32_t>(b.tokens, size_t(n * shape.context)));
  targets.upload(std::span<const int32_t>(b.targets, size_t(n * per_target)));

  // One compute thread on the CPU: its CPU time, as the slowdown emulator paces it, so that ranks timing
  // their blocks at once on shared cores do not count the waits for a core (they made one rank of four
  // on two cores look twice as fast as another of the same speed); else the wall time.
  const bool thread_cpu = paced_by_thread_cpu(k);
  auto timed = [&k, thread_cpu](auto&& work) {
    k.synchronize();
    const ComputeTimer timer(thread_cpu);
    work();
    k.synchronize();
    return 1e3 * (thread_cpu ? timer.cpu_seconds() : timer.wall_seconds());
  };
  const BlockHooks none;
  BlockTimes t;
  for (int i = 0; i < model.block_count(); ++i) {
    Block& block = model.block(i);
    const BlockShape& s = block.shape();
    const auto [begin, end] = window_of(s);
    Buffer<float> params(k, size_t(end - begin)), grads(k, size_t(end - begin));
    params.upload(model.initial_params(begin, end));
    grads.zero();
    const ParamWindow w{params.data(), grads.data(), begin};
    out.grow(size_t(n * s.out_floats));
    saved.grow(size_t(n * s.saved_floats));
    if (i > 0) dx.grow(size_t(n * s.in_floats));
    const BlockData d{n, in.data(), tokens.data(), targets.data(), out.data(), s.saved_floats ? saved.data() : nullptr};
    const bool head = i + 1 == model.block_count();
    std::vector<double> fwd, bwd, upd;
    for (int it = 0; it < warmup + steps; ++it) {
      const double f = timed([&] { block.forward(w, d, 1.0f / float(n * per_target), none); });
      const double g = timed([&] { block.backward(w, d, head ? nullptr : out.data(), i > 0 ? dx.data() : nullptr,
                                                  false, none); });
      if (it >= warmup) fwd.push_back(f), bwd.push_back(g);
    }
    t.forward_ms.push_back(median(fwd));
    t.backward_ms.push_back(median(bwd));
    if (updates) {
      double update = 0;
      if (s.param_count > 0) {
        const auto opt = make_optimizer(job.optim, s.param_count, k);
        for (int it = 0; it < warmup + steps; ++it) {
          const double u = timed([&] {
            opt->update_range(params.data() + (s.param_offset - begin), grads.data() + (s.param_offset - begin), 0,
                              s.param_count, 0.0, opt->begin_step());
          });
          if (it >= warmup) upd.push_back(u);
        }
        update = median(upd);
      }
      t.update_ms.push_back(update);
    }
    std::swap(in, out);  // its output is the next block's input
  }
  return t;
}

// A replica's whole step at n samples as a data-parallel rank's step times its compute (the batch
// gathered, forward and backward through the model it holds), each after the optimizer's update of the
// whole model as in training (untimed: it leaves the caches holding optimizer state, not the weights the
// next forward reads), resting after it as an emulated rank of factor `resting` would: the median of
// `steps`, in ms.
double whole_step_ms(const Job& job, Model& model, const Dataset& data, int64_t n, int steps, int warmup,
                     double resting) {
  std::vector<uint32_t> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), 0u);
  BatchBuffer buffer;
  const auto params = int64_t(model.params().size());
  const auto opt = make_optimizer(job.optim, params, model.kernels());
  const bool thread_cpu = paced_by_thread_cpu(model.kernels());  // as the blocks are timed
  std::vector<double> times;
  for (int it = 0; it < warmup + steps; ++it) {
    opt->update_range(model.params().data(), model.grads().data(), 0, params, 0.0, opt->begin_step());
    model.kernels().synchronize();
    const ComputeTimer timer(thread_cpu);
    model.forward_backward(gather_batch(data, idx, buffer), 1.0f, 0);
    model.kernels().synchronize();
    const double ms = 1e3 * (thread_cpu ? timer.cpu_seconds() : timer.wall_seconds());
    rest_as_emulated(resting, ms);
    if (it >= warmup) times.push_back(ms);
  }
  return median(times);
}

// What a whole step takes beyond its blocks (step_extra_ms and its fixed part: profile.h), on a model
// that holds its parameters, built here when its parameters and gradients take at most 1 GiB (else
// left at 0: a model that large spends its step in the blocks). For a job that emulates slow devices,
// the whole step again resting after each as its fastest rank would (the emulator rests once per
// computation: a data rank's step, a stage's operation), and every time scaled by the ratio of the
// two at its size (the fixed parts from the scaled line): timing each block resting instead charged a
// pipeline's multi-block stages a rest per block (measured 15-25% slow) and the GPT's blocks more
// than its runs pay.
void time_step_extra(const Job& job, const Model& blocks_model, const Dataset& data, const Kernels& k, int steps,
                     int warmup, pipeline::BlockProfile& p) {
  double params = 0;
  for (int i = 0; i < blocks_model.block_count(); ++i) params += double(blocks_model.block(i).shape().param_count);
  if (8.0 * params > double(1 << 30)) return;
  auto model = make_model(job.model, data.shape(), job.job.seed, k, /*hold_parameters=*/true);
  const int64_t n = p.micro_batch, few = std::max<int64_t>(1, n / 8);
  auto blocks_ms = [&p, n](int64_t m) {  // the profile's blocks at m samples
    double t = 0;
    for (const pipeline::BlockRow& b : p.blocks) {
      const double fixed = b.forward_fixed_ms + b.backward_fixed_ms, all = b.forward_ms + b.backward_ms;
      t += fixed + double(m) / double(n) * (all - fixed);
    }
    return t;
  };
  const double hot_n = whole_step_ms(job, *model, data, n, steps, warmup, 1);
  const double hot_few = few < n ? whole_step_ms(job, *model, data, few, steps, warmup, 1) : hot_n;
  const double at_n = std::max(0.0, hot_n - blocks_ms(n));
  const double at_few = few < n ? std::max(0.0, hot_few - blocks_ms(few)) : at_n;
  p.step_extra_ms = at_n;
  p.step_extra_fixed_ms = profile_fixed_ms(at_n, n, {{few, at_few}});
  const double factor = fastest_emulated_factor(job);
  if (factor <= 1 || !(hot_n > 0) || !(hot_few > 0)) return;
  const double ratio_n = std::max(1.0, whole_step_ms(job, *model, data, n, steps, warmup, factor) / hot_n);
  const double ratio_few =
      few < n ? std::max(1.0, whole_step_ms(job, *model, data, few, steps, warmup, factor) / hot_few) : ratio_n;
  // The line's points scaled: a few samples' by its own ratio, n's and many's by n's.
  const int64_t many = profile_many_samples(job, n, data.count);
  auto scale = [&](double& all, double& fixed) {
    auto at = [&](int64_t m) { return fixed + double(m) / double(n) * (all - fixed); };
    const double few_ms = at(few), many_ms = at(many);
    all *= ratio_n;
    fixed = profile_fixed_ms(all, n, {{few, ratio_few * few_ms}, {many, ratio_n * many_ms}});
  };
  for (pipeline::BlockRow& b : p.blocks) {
    scale(b.forward_ms, b.forward_fixed_ms);
    scale(b.backward_ms, b.backward_fixed_ms);
  }
  scale(p.step_extra_ms, p.step_extra_fixed_ms);
  p.timed_resting = factor;
  p.rest_scale = ratio_n;
}

}  // namespace

pipeline::BlockProfile measure_block_profile(const Job& job, int64_t micro_batch, int steps, int warmup) {
  if (micro_batch < 1)
    throw UsageError("profile --batch", fmt::format("{} samples", micro_batch), "a micro-batch has at least 1 sample");
  const bool cuda = choose_device(job).kind == DeviceKind::cuda;
  if (cuda) use_cuda_device(0, job.train.precision == Precision::bf16);
  const Kernels& k = cuda ? *cuda_kernel_table() : cpu_kernels();
  cpu::set_compute_threads(job.train.threads > 0 ? int(job.train.threads) : 1);
  const DatasetSplits data = load_dataset(job.data, job.job.seed);
  auto model = make_model(job.model, data.train.shape(), job.job.seed, k, /*hold_parameters=*/false);
  pipeline::BlockProfile p = profile_blocks(job, *model, data.train, micro_batch, steps, warmup);
  time_step_extra(job, *model, data.train, k, steps, warmup, p);
  return p;
}

double profile_fixed_ms(double t_n, int64_t n, const std::vector<TimedAt>& others) {
  double moment = 0, spread = 0;
  for (const TimedAt& o : others) {
    if (o.samples == n) continue;
    const double dx = double(o.samples - n);
    moment += dx * (o.ms - t_n), spread += dx * dx;
  }
  if (!(spread > 0)) return 0.0;
  return std::clamp(t_n - moment / spread * double(n), 0.0, t_n);
}

pipeline::BlockProfile profile_blocks(const Job& job, Model& model, const Dataset& data, int64_t micro_batch,
                                      int steps, int warmup, ProfileSizes larger) {
  const int count = model.block_count();
  if (count == 0)
    throw JobError("[model] type", fmt::format("model '{}' does not run as blocks", name_of(job.model.type)),
                   "use mlp, cnn or gpt");
  const SampleShape shape = data.shape();
  const bool text = shape.is_text();
  const int64_t n = std::min<int64_t>(micro_batch, data.count);
  // Each block's time at n samples, at a few and at many: what a micro-batch pays whatever its size is
  // the line through them (profile_fixed_ms), at 0 samples.
  const BlockTimes full = time_blocks(job, model, data, n, steps, warmup, /*updates=*/true);
  const int64_t few = std::max<int64_t>(1, n / 8);
  const int64_t many = larger == ProfileSizes::with_larger ? profile_many_samples(job, n, data.count) : n;
  const BlockTimes small = few < n ? time_blocks(job, model, data, few, steps, warmup, false) : full;
  const BlockTimes large = many > n ? time_blocks(job, model, data, many, steps, warmup, false) : full;
  const std::vector<double>& updates = full.update_ms;
  const bool cuda = !model.kernels().host_memory;
  std::vector<BlockShape> shapes;
  for (int i = 0; i < count; ++i) shapes.push_back(model.block(i).shape());
  pipeline::BlockProfile p = block_sizes(shapes, 4.0 * double(text ? shape.context : shape.features), n);
  p.model = model.describe();
  p.device = cuda ? "cuda" : "cpu";
  for (int i = 0; i < count; ++i) {
    const size_t b = size_t(i);
    pipeline::BlockRow& row = p.blocks[b];
    row.forward_ms = full.forward_ms[b];
    row.backward_ms = full.backward_ms[b];
    row.forward_fixed_ms =
        profile_fixed_ms(row.forward_ms, n, {{few, small.forward_ms[b]}, {many, large.forward_ms[b]}});
    row.backward_fixed_ms =
        profile_fixed_ms(row.backward_ms, n, {{few, small.backward_ms[b]}, {many, large.backward_ms[b]}});
    row.update_ms = updates[b];
  }
  return p;
}

pipeline::BlockProfile block_sizes(const std::vector<BlockShape>& blocks, double input_bytes, int64_t micro_batch) {
  pipeline::BlockProfile p;
  p.micro_batch = micro_batch;
  p.input_bytes = input_bytes;
  auto owner = [&](int64_t offset) {  // the block whose parameters hold `offset`
    for (size_t j = 0; j < blocks.size(); ++j)
      if (offset >= blocks[j].param_offset && offset < blocks[j].param_offset + blocks[j].param_count) return int(j);
    return -1;
  };
  for (size_t i = 0; i < blocks.size(); ++i) {
    const BlockShape& s = blocks[i];
    // A block keeps its input for its backward: the data (or the token ids) for the first, else the
    // previous block's output.
    const double input = i == 0 ? input_bytes : 4.0 * double(blocks[i - 1].out_floats);
    pipeline::BlockRow row;
    row.name = s.name;
    row.output_bytes = 4.0 * double(s.out_floats);
    row.saved_bytes = input + 4.0 * double(s.saved_floats);
    row.work_bytes = 4.0 * double(s.scratch_floats);
    row.param_bytes = 4.0 * double(s.param_count);
    row.shares_weights_with = s.shared_count > 0 ? owner(s.shared_offset) : -1;
    p.blocks.push_back(std::move(row));
  }
  return p;
}

}  // namespace dp
