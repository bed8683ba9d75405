// Model factory and the architecture fingerprint shared by every model type.
#include "models/model.h"

#include <fmt/format.h>

#include "lib/core/error.h"
#include "models/cnn.h"
#include "models/gpt.h"
#include "models/mlp.h"

namespace dp {

uint64_t Model::fingerprint() const {
  // FNV-1a over the type and each layer's kind and parameter count.
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](const void* data, size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  };
  const std::string t = type();
  mix(t.data(), t.size());
  for (const LayerInfo& l : layers_) {
    mix(l.kind.data(), l.kind.size());
    mix(&l.param_count, sizeof l.param_count);
    mix(&l.activations_per_sample, sizeof l.activations_per_sample);
  }
  return h;
}

double Model::flops_per_sample() const {
  double f = 0;
  for (const LayerInfo& l : layers_) f += l.flops_per_sample;
  return f;
}

std::unique_ptr<Model> make_model(const ModelSection& spec, const SampleShape& shape, uint64_t seed) {
  if (shape.is_text() && spec.type != "gpt")
    throw JobError("[model] type", fmt::format("model '{}' cannot read text data", spec.type),
                   "use type = \"gpt\" for [data] dataset = \"text\"");
  if (spec.type == "mlp") return std::make_unique<Mlp>(spec.hidden, shape.features, shape.classes, seed);
  if (spec.type == "cnn") return std::make_unique<Cnn>(spec, shape, seed);
  if (spec.type == "gpt") return std::make_unique<Gpt>(spec, shape, seed);
  throw JobError("[model] type", "unknown model type '" + spec.type + "'", "valid: mlp, cnn, gpt");
}

}  // namespace dp
