// Shared by the model tests: a random batch of the right kind for a model's samples, and one small
// model spec of each type.
#pragma once

#include <vector>

#include "lib/core/rng.h"
#include "models/model.h"
#include "lib/job/job_enums_io.h"  // BOOST_TEST prints compared enums by name

namespace dp {

struct Data {
  std::vector<float> x;
  std::vector<int32_t> tokens, targets;
};

inline Batch random_batch(const SampleShape& shape, int64_t n, Data& d) {
  Rng rng(42);
  if (shape.is_text()) {
    for (int64_t i = 0; i < n * shape.context; ++i) {
      d.tokens.push_back(int32_t(rng.next() % uint64_t(shape.classes)));
      d.targets.push_back(int32_t(rng.next() % uint64_t(shape.classes)));
    }
    return {n, nullptr, d.tokens.data(), d.targets.data()};
  }
  for (int64_t i = 0; i < n * shape.features; ++i) d.x.push_back(float(rng.uniform()));
  for (int64_t i = 0; i < n; ++i) d.targets.push_back(int32_t(rng.next() % uint64_t(shape.classes)));
  return {n, d.x.data(), nullptr, d.targets.data()};
}

inline std::vector<std::pair<ModelSection, SampleShape>> small_models() {
  ModelSection mlp;
  mlp.type = dp::ModelType::mlp;
  mlp.hidden = {16, 12};
  ModelSection cnn;
  cnn.type = dp::ModelType::cnn;
  cnn.channels = {4, 8};
  cnn.blocks = 1;
  ModelSection gpt;
  gpt.type = dp::ModelType::gpt;
  gpt.layers = 2;
  gpt.width = 16;
  gpt.heads = 2;
  gpt.context = 12;
  return {{mlp, {.features = 20, .classes = 5}},
          {cnn, {.features = 64, .classes = 3, .channels = 1, .height = 8, .width = 8}},
          {gpt, {.classes = 11, .context = 12}}};
}

}  // namespace dp
