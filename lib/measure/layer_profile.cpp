// measure_block_profile (layer_profile.h): the model's blocks run one after another as in a one-stage
// pipeline, each forward and backward timed on its own (the device synchronised around it), at the
// micro-batch asked for and at an eighth of it, whose line gives each time's fixed part; and the job's
// optimizer updating each block's parameters.
#include "lib/measure/layer_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <numeric>

#include "kernels/cpu/ops.h"
#include "lib/core/backend.h"
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

struct BlockTimes {
  std::vector<double> forward_ms, backward_ms;  // per block, the median of `steps`
};

// Each block's optimizer update of its parameters (the job's optimizer, its own state), the median of
// `steps`.
std::vector<double> time_updates(const Job& job, Model& model, int steps, int warmup) {
  const Kernels& k = model.kernels();
  std::vector<double> out;
  for (int i = 0; i < model.block_count(); ++i) {
    const BlockShape& s = model.block(i).shape();
    if (s.param_count == 0) {
      out.push_back(0);
      continue;
    }
    const auto opt = make_optimizer(job.optim, s.param_count, k);
    std::vector<double> ms;
    for (int it = 0; it < warmup + steps; ++it) {
      k.synchronize();
      const auto t0 = std::chrono::steady_clock::now();
      opt->update_range(model.params().data() + s.param_offset, model.grads().data() + s.param_offset, 0,
                        s.param_count, 0.0, opt->begin_step());  // lr 0: the parameters stay as they are
      k.synchronize();
      if (it >= warmup) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    out.push_back(median(ms));
  }
  return out;
}

// The model's blocks run one after another on the first n samples of `data` (as a one-stage pipeline),
// each forward and backward timed on its own, the device synchronised around it.
BlockTimes time_blocks(Model& model, const Dataset& data, int64_t n, int steps, int warmup) {
  const Kernels& k = model.kernels();
  const SampleShape shape = data.shape();
  const bool text = shape.is_text();
  const int count = model.block_count();
  std::vector<uint32_t> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), 0u);
  BatchBuffer host;
  const Batch b = gather_batch(data, idx, host);
  const int64_t per_target = text ? shape.context : 1;
  Buffer<float> x(k, size_t(text ? 0 : n * shape.features));
  Buffer<int32_t> tokens(k, size_t(text ? n * shape.context : 0)), targets(k, size_t(n * per_target));
  if (!text) x.upload(std::span<const float>(b.x, size_t(n * shape.features)));
  else tokens.upload(std::span<const int32_t>(b.tokens, size_t(n * shape.context)));
  targets.upload(std::span<const int32_t>(b.targets, size_t(n * per_target)));

  std::vector<Buffer<float>> outs, saved;
  for (int i = 0; i < count; ++i) {
    const BlockShape& s = model.block(i).shape();
    outs.emplace_back(k, size_t(n * s.out_floats));
    saved.emplace_back(k, size_t(n * s.saved_floats));
  }
  Buffer<float> dx_a(k), dx_b(k);
  const ParamWindow w{model.params().data(), model.grads().data(), 0};
  const BlockHooks none;
  auto data_of = [&](int i) {
    return BlockData{n, i == 0 ? x.data() : outs[size_t(i) - 1].data(), tokens.data(), targets.data(),
                     outs[size_t(i)].data(), model.block(i).shape().saved_floats ? saved[size_t(i)].data() : nullptr};
  };
  using clock = std::chrono::steady_clock;
  auto ms_since = [](clock::time_point t0) { return std::chrono::duration<double, std::milli>(clock::now() - t0).count(); };
  std::vector<std::vector<double>> fwd(static_cast<size_t>(count)), bwd(static_cast<size_t>(count));
  for (int it = 0; it < warmup + steps; ++it) {
    for (int i = 0; i < count; ++i) {
      k.synchronize();
      const auto t0 = clock::now();
      model.block(i).forward(w, data_of(i), 1.0f / float(n * per_target), none);
      k.synchronize();
      if (it >= warmup) fwd[size_t(i)].push_back(ms_since(t0));
    }
    const float* dy = nullptr;
    for (int i = count; i-- > 0;) {
      float* dx = nullptr;
      if (i > 0) {
        Buffer<float>& buf = i % 2 == 0 ? dx_a : dx_b;
        buf.grow(size_t(n * model.block(i).shape().in_floats));
        dx = buf.data();
      }
      k.synchronize();
      const auto t0 = clock::now();
      model.block(i).backward(w, data_of(i), dy, dx, false, none);
      k.synchronize();
      if (it >= warmup) bwd[size_t(i)].push_back(ms_since(t0));
      dy = dx;
    }
  }
  BlockTimes t;
  for (int i = 0; i < count; ++i) {
    t.forward_ms.push_back(median(fwd[size_t(i)]));
    t.backward_ms.push_back(median(bwd[size_t(i)]));
  }
  return t;
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
  auto model = make_model(job.model, data.train.shape(), job.job.seed, k);
  const int count = model->block_count();
  if (count == 0)
    throw JobError("[model] type", fmt::format("model '{}' does not run as blocks", name_of(job.model.type)),
                   "use mlp, cnn or gpt");
  const SampleShape shape = data.train.shape();
  const bool text = shape.is_text();
  const int64_t n = std::min<int64_t>(micro_batch, data.train.count);
  // Each block's time at n samples, and at a few: what a micro-batch pays whatever its size is the
  // line through the two, at 0 samples.
  const BlockTimes full = time_blocks(*model, data.train, n, steps, warmup);
  const int64_t few = std::max<int64_t>(1, n / 8);
  const BlockTimes small = few < n ? time_blocks(*model, data.train, few, steps, warmup) : full;
  const std::vector<double> updates = time_updates(job, *model, steps, warmup);
  auto fixed_part = [&](double t_n, double t_few) {
    if (few >= n) return 0.0;
    const double per_sample = (t_n - t_few) / double(n - few);
    return std::clamp(t_few - per_sample * double(few), 0.0, t_n);
  };
  std::vector<BlockShape> shapes;
  for (int i = 0; i < count; ++i) shapes.push_back(model->block(i).shape());
  pipeline::BlockProfile p = block_sizes(shapes, 4.0 * double(text ? shape.context : shape.features), n);
  p.model = model->describe();
  p.device = cuda ? "cuda" : "cpu";
  for (int i = 0; i < count; ++i) {
    pipeline::BlockRow& row = p.blocks[size_t(i)];
    row.forward_ms = full.forward_ms[size_t(i)];
    row.backward_ms = full.backward_ms[size_t(i)];
    row.forward_fixed_ms = fixed_part(row.forward_ms, small.forward_ms[size_t(i)]);
    row.backward_fixed_ms = fixed_part(row.backward_ms, small.backward_ms[size_t(i)]);
    row.update_ms = updates[size_t(i)];
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
