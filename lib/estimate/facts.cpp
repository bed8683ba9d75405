// model_facts (estimate.h): the job's model's shape (models/model_shape.h: its block shapes from [model]
// and the data's sample shape, nothing allocated, so a model of any size is sized in milliseconds), and
// its data set loaded for the sizes every rank will hold.
#include <fmt/format.h>

#include "lib/core/error.h"
#include "lib/data/dataset.h"
#include "lib/estimate/estimate.h"
#include "models/model_shape.h"

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
  const SampleShape shape = data.train.shape();
  const ModelShape model = model_shape(job.model, shape, cpu_kernels());
  if (model.blocks.empty())
    throw JobError("[model] type", fmt::format("model '{}' does not run as blocks", name_of(job.model.type)),
                   "use mlp, cnn or gpt");
  ModelFacts f;
  f.describe = model.describe;
  f.blocks = model.blocks;
  for (const BlockShape& b : f.blocks) f.shared_head = f.shared_head || b.shared_count > 0;
  f.parameters = model.parameters;
  f.fixed_bytes = 4.0 * double(model.fixed_floats);
  f.input_floats = shape.is_text() ? 0 : shape.features;
  f.input_tokens = shape.is_text() ? shape.context : 0;
  f.targets_per_sample = model.targets_per_sample;
  f.train_samples = data.train.count;
  f.test_samples = data.test.count;
  f.eval_chunk = std::min(evaluation_chunk(data.test), data.test.count);
  if (model.evaluation_chunk > 0) f.eval_chunk = std::min(f.eval_chunk, model.evaluation_chunk);
  if (job.train.micro_batch > 0) f.eval_chunk = std::min(f.eval_chunk, job.train.micro_batch);
  f.dataset_bytes = bytes_of(data.train) + bytes_of(data.test);
  return f;
}

}  // namespace dp::estimate
