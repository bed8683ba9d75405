// The model configurations whose layouts tests/models/test_model_layout.cpp pins down, and the record of
// one model's layout: what checkpoints, gradient buckets and the planners read from it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/core/batch.h"
#include "lib/job/job.h"

namespace model_layouts {

struct Config {
  std::string name;
  dp::ModelSection spec;
  dp::SampleShape shape;
  int64_t hook_slice = 0;  // Model::set_hook_slice
};

struct LayerRow {
  std::string name, kind;
  int64_t param_offset, param_count, activations_per_sample;
  double flops_per_sample;
  bool operator==(const LayerRow&) const = default;
};

struct Layout {
  uint64_t fingerprint = 0;
  std::vector<std::pair<int64_t, int64_t>> hook_ranges;  // Model::hook_ranges(): (offset, count), forward order
  std::vector<LayerRow> layers;                          // Model::layers()
  std::vector<std::pair<double, double>> block_flops;    // each block's forward and backward FLOPs
};

inline dp::ModelSection mlp(std::vector<int64_t> hidden) {
  dp::ModelSection s;
  s.type = dp::ModelType::mlp;
  s.hidden = std::move(hidden);
  return s;
}

inline dp::ModelSection cnn(std::vector<int64_t> channels, int64_t blocks) {
  dp::ModelSection s;
  s.type = dp::ModelType::cnn;
  s.channels = std::move(channels);
  s.blocks = blocks;
  return s;
}

inline dp::ModelSection gpt(int64_t layers, int64_t heads, int64_t width, int64_t context, bool tied) {
  dp::ModelSection s;
  s.type = dp::ModelType::gpt;
  s.layers = layers;
  s.heads = heads;
  s.width = width;
  s.context = context;
  s.tied_head = tied;
  return s;
}

// configs/*.toml's models (Fashion-MNIST: 784 features, 1x28x28, 10 classes; the Jargon File's text with
// a vocabulary of 96 here), tests/models/model_testing.h's small ones, and edge cases: no hidden layer, no
// residual block, a position table longer than the context, hooks announcing slices.
inline std::vector<Config> configs() {
  const dp::SampleShape fashion{.features = 784, .classes = 10, .channels = 1, .height = 28, .width = 28};
  return {
      {"mlp quickstart", mlp({256, 128}), fashion},
      {"mlp quickstart sliced", mlp({256, 128}), fashion, 16384},
      {"mlp cgp", mlp({1024, 1024}), fashion},
      {"mlp comm_heavy sliced", mlp({2048, 2048, 2048}), fashion, 1 << 20},
      {"mlp small", mlp({16, 12}), {.features = 20, .classes = 5}},
      {"mlp no hidden", mlp({}), {.features = 8, .classes = 3}},
      {"cnn config", cnn({8, 16, 32}, 1), fashion},
      {"cnn small", cnn({4, 8}, 1), {.features = 64, .classes = 3, .channels = 1, .height = 8, .width = 8}},
      {"cnn rgb two blocks", cnn({16, 32}, 2),
       {.features = 3 * 32 * 32, .classes = 10, .channels = 3, .height = 32, .width = 32}},
      {"cnn no residual", cnn({8}, 0), {.features = 7 * 9, .classes = 4, .channels = 1, .height = 7, .width = 9}},
      {"gpt config tied", gpt(4, 4, 128, 128, true), {.classes = 96, .context = 128}},
      {"gpt pipeline untied", gpt(4, 4, 128, 128, false), {.classes = 96, .context = 128}},
      {"gpt small", gpt(2, 2, 16, 12, true), {.classes = 11, .context = 12}},
      {"gpt long table untied", gpt(3, 4, 32, 80, false), {.classes = 96, .context = 64}},
  };
}


}  // namespace model_layouts
