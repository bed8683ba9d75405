// model_facts (estimate.h): the job's model built on the CPU for its block shapes, and its data set loaded
// for the sizes every rank will hold. Parameters are allocated (the model initialises them); activations
// are not.
#include <fmt/format.h>

#include "lib/core/error.h"
#include "lib/core/memory_meter.h"
#include "lib/data/dataset.h"
#include "lib/estimate/estimate.h"
#include "lib/data/dataset.h"
#include "models/model.h"

namespace dp::estimate {

double ModelFacts::forward_flops() const {
  double f = 0;
  for (const BlockShape& b : blocks) f += b.forward_flops;
  return f;
}

double ModelFacts::backward_flops() const {
  double f = 0;
  for (const BlockShape& b : blocks) f += b.backward_flops;
  return f;
}

namespace {

double bytes_of(const Dataset& d) {
  return 4.0 * double(d.x.size() + d.y.size() + d.text.size() + d.vocab.size());
}

}  // namespace

ModelFacts model_facts(const Job& job) {
  const DatasetSplits data = load_dataset(job.data, job.job.seed);
  auto meter = std::make_shared<MemoryMeter>();
  const MeterScope scope(meter);
  const auto model = make_model(job.model, data.train.shape(), job.job.seed, cpu_kernels());
  if (model->block_count() == 0)
    throw JobError("[model] type", fmt::format("model '{}' does not run as blocks", name_of(job.model.type)),
                   "use mlp, cnn or gpt");
  ModelFacts f;
  f.describe = model->describe();
  for (int i = 0; i < model->block_count(); ++i) {
    f.blocks.push_back(model->block(i).shape());
    f.shared_head = f.shared_head || f.blocks.back().shared_count > 0;
  }
  f.parameters = int64_t(model->params().size());
  f.fixed_bytes = double(meter->live()) - 8.0 * double(f.parameters);  // built: parameters, gradients, fixed
  const SampleShape shape = data.train.shape();
  f.input_floats = shape.is_text() ? 0 : shape.features;
  f.input_tokens = shape.is_text() ? shape.context : 0;
  f.targets_per_sample = model->targets_per_sample();
  f.train_samples = data.train.count;
  f.test_samples = data.test.count;
  f.eval_chunk = std::min(evaluation_chunk(data.test), data.test.count);
  if (model->evaluation_chunk() > 0) f.eval_chunk = std::min(f.eval_chunk, model->evaluation_chunk());
  f.dataset_bytes = bytes_of(data.train) + bytes_of(data.test);
  return f;
}

}  // namespace dp::estimate
