// Model factory and the architecture fingerprint shared by every model type.
#include "models/model.h"

#include <fmt/format.h>

#include "lib/core/error.h"
#include "models/cnn.h"
#include "models/gpt.h"
#include "models/mlp.h"

namespace dp {

uint64_t Model::fingerprint() const {
  // FNV-1a over the type, the input dimensions the parameters do not show, and each layer's kind and
  // parameter count.
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](const void* data, size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  };
  const std::string t = type();
  mix(t.data(), t.size());
  for (int64_t d : unparameterised_input()) mix(&d, sizeof d);
  for (const LayerInfo& l : layers_) {
    mix(l.kind.data(), l.kind.size());
    mix(&l.param_count, sizeof l.param_count);
  }
  return h;
}

void Model::set_parameters(const std::vector<float>& initial) {
  params_ = Buffer<float>(k_, initial.size());
  grads_ = Buffer<float>(k_, initial.size());
  params_.upload(initial);
  grads_.zero();
}

void Model::params_from_host(std::span<const float> host) {
  DP_CHECK(host.size() == params_.size(), "parameter count mismatch");
  params_.upload(host);
}

std::vector<ParamRange> Model::hook_ranges() const {
  std::vector<ParamRange> ranges;
  for (const LayerInfo& l : layers_)
    if (l.param_count > 0) ranges.push_back({l.param_offset, l.param_count});
  return ranges;
}

double Model::flops_per_sample() const {
  double f = 0;
  for (const LayerInfo& l : layers_) f += l.flops_per_sample;
  return f;
}

std::unique_ptr<Model> make_model(const ModelSection& spec, const SampleShape& shape, uint64_t seed,
                                  const Kernels& k) {
  if (shape.is_text() && spec.type != "gpt")
    throw JobError("[model] type", fmt::format("model '{}' cannot read text data", spec.type),
                   "use type = \"gpt\" for [data] dataset = \"text\"");
  if (spec.type == "mlp") return std::make_unique<Mlp>(spec.hidden, shape.features, shape.classes, seed, k);
  if (spec.type == "cnn") return std::make_unique<Cnn>(spec, shape, seed, k);
  if (spec.type == "gpt") return std::make_unique<Gpt>(spec, shape, seed, k);
  throw JobError("[model] type", "unknown model type '" + spec.type + "'", "valid: mlp, cnn, gpt");
}

}  // namespace dp
