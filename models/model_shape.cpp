// model_shape (model_shape.h): each model type's layout function, without the model; and the architecture
// fingerprint the built models share.
#include "models/model_shape.h"

#include <fmt/format.h>

#include <stdexcept>

#include "lib/core/error.h"
#include "models/cnn.h"
#include "models/gpt.h"
#include "models/mlp.h"

namespace dp {

std::vector<LayerInfo> ModelShape::layers() const {
  std::vector<LayerInfo> all;
  for (const BlockShape& b : blocks) all.insert(all.end(), b.layers.begin(), b.layers.end());
  return all;
}

uint64_t ModelShape::fingerprint() const { return architecture_fingerprint(type, unparameterised_input, layers()); }

double ModelShape::flops_per_sample() const {
  double f = 0;
  for (const BlockShape& b : blocks) f += b.forward_flops;
  return f;
}

std::vector<ParamRange> ModelShape::hook_ranges(int64_t slice_floats) const {
  std::vector<ParamRange> ranges;
  for (const BlockShape& b : blocks) {
    if (type == "mlp") {  // Linear blocks that can announce slices (models/mlp_blocks.h)
      const std::vector<ParamRange> own = dense_hook_ranges(dense_of(b), slice_floats);
      ranges.insert(ranges.end(), own.begin(), own.end());
      continue;
    }
    for (const LayerInfo& l : b.layers)  // whole layers (Block::hook_ranges)
      if (l.param_count > 0) ranges.push_back({l.param_offset, l.param_count});
  }
  return ranges;
}

uint64_t architecture_fingerprint(const std::string& type, const std::vector<int64_t>& unparameterised_input,
                                  const std::vector<LayerInfo>& layers) {
  // FNV-1a over the type, the input dimensions the parameters do not show, and each layer's kind and
  // parameter count: the blocks' layers, hashed as the models' own layer tables were, so checkpoints of
  // earlier versions still resume (tests/models/test_model_layout.cpp pins the values).
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](const void* data, size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  };
  mix(type.data(), type.size());
  for (int64_t d : unparameterised_input) mix(&d, sizeof d);
  for (const LayerInfo& l : layers) {
    mix(l.kind.data(), l.kind.size());
    mix(&l.param_count, sizeof l.param_count);
  }
  return h;
}

void check_model_reads(const ModelSection& spec, const SampleShape& shape) {
  if (shape.is_text() && spec.type != ModelType::gpt)
    throw JobError("[model] type", fmt::format("model '{}' cannot read text data", name_of(spec.type)),
                   "use type = \"gpt\" for [data] dataset = \"text\"");
}

ModelShape model_shape(const ModelSection& spec, const SampleShape& shape, const Kernels& k) {
  check_model_reads(spec, shape);
  switch (spec.type) {
    case ModelType::mlp: return mlp_model_shape(spec.hidden, shape.features, shape.classes);
    case ModelType::cnn: return cnn_model_shape(spec, shape, k);
    case ModelType::gpt: return gpt_arch(spec, shape, k).shape();
  }
  throw std::logic_error("model_shape: a ModelType without a case");
}

}  // namespace dp
