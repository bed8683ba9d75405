// model_shape() (models/model_shape.h), the shape of a model without building it, against the built model's
// own, field by field: every block's shape and layer table, the parameter count, the fixed buffers (checked
// against what the memory meter saw the model allocate), the fingerprint recorded in
// tests/models/model_layout_records.h, the gradient hooks' ranges, describe(), loss terms per sample and evaluation chunk; for every
// configuration tests/models/model_layouts.h lists (configs/*.toml's models, the small test models, edge
// cases) and a few more. Bad options are refused by both the same way.
#define BOOST_TEST_MODULE model_shape
#include <boost/test/unit_test.hpp>

#include <fmt/format.h>

#include <memory>
#include <string>

#include "lib/core/error.h"
#include "lib/core/memory_meter.h"
#include "models/model.h"
#include "models/model_shape.h"
#include "tests/models/model_layout_records.h"

namespace {

using model_layouts::Config;

void check_layer(const dp::LayerInfo& a, const dp::LayerInfo& b, const std::string& where) {
  BOOST_TEST_CONTEXT(where) {
    BOOST_TEST(a.name == b.name);
    BOOST_TEST(a.kind == b.kind);
    BOOST_TEST(a.param_offset == b.param_offset);
    BOOST_TEST(a.param_count == b.param_count);
    BOOST_TEST(a.activations_per_sample == b.activations_per_sample);
    BOOST_TEST(a.flops_per_sample == b.flops_per_sample);  // the same arithmetic: exactly equal
  }
}

void check_block(const dp::BlockShape& a, const dp::BlockShape& b, const std::string& where) {
  BOOST_TEST_CONTEXT(where) {
    BOOST_TEST(a.name == b.name);
    BOOST_TEST(a.kind == b.kind);
    BOOST_TEST(a.param_offset == b.param_offset);
    BOOST_TEST(a.param_count == b.param_count);
    BOOST_TEST(a.shared_offset == b.shared_offset);
    BOOST_TEST(a.shared_count == b.shared_count);
    BOOST_TEST(a.in_floats == b.in_floats);
    BOOST_TEST(a.in_tokens == b.in_tokens);
    BOOST_TEST(a.out_floats == b.out_floats);
    BOOST_TEST(a.saved_floats == b.saved_floats);
    BOOST_TEST(a.scratch_floats == b.scratch_floats);
    BOOST_TEST(a.eval_scratch_floats == b.eval_scratch_floats);
    BOOST_TEST(a.scratch_fixed_floats == b.scratch_fixed_floats);
    BOOST_TEST(a.forward_flops == b.forward_flops);
    BOOST_TEST(a.backward_flops == b.backward_flops);
    BOOST_TEST_REQUIRE(a.layers.size() == b.layers.size());
    for (size_t i = 0; i < a.layers.size(); ++i) check_layer(a.layers[i], b.layers[i], fmt::format("layer {}", i));
  }
}

// The shape-only path against the model built (its buffers metered), field by field.
void check_config(const std::string& name, const dp::ModelSection& spec, const dp::SampleShape& shape,
                  int64_t hook_slice = 0) {
  BOOST_TEST_CONTEXT(name) {
    const dp::ModelShape s = dp::model_shape(spec, shape);
    auto meter = std::make_shared<dp::MemoryMeter>();
    std::unique_ptr<dp::Model> model;
    {
      const dp::MeterScope scope(meter);
      model = dp::make_model(spec, shape, /*seed=*/1);
    }
    const dp::ModelShape built = model->shape();
    BOOST_TEST(s.type == built.type);
    BOOST_TEST(s.describe == model->describe());
    BOOST_TEST(s.parameters == int64_t(model->params().size()));
    BOOST_TEST(s.fixed_floats == built.fixed_floats);
    // What the model allocated besides its parameters and gradients: the fixed buffers, no more.
    BOOST_TEST(4 * s.fixed_floats == int64_t(meter->live()) - 8 * s.parameters);
    BOOST_TEST(s.targets_per_sample == model->targets_per_sample());
    BOOST_TEST(s.evaluation_chunk == model->evaluation_chunk());
    BOOST_TEST(s.unparameterised_input == built.unparameterised_input);
    BOOST_TEST(s.fingerprint() == model->fingerprint());
    BOOST_TEST(s.flops_per_sample() == model->flops_per_sample());
    model->set_hook_slice(hook_slice);
    std::vector<std::pair<int64_t, int64_t>> shaped, built_ranges;
    for (const dp::ParamRange& r : s.hook_ranges(hook_slice)) shaped.emplace_back(r.offset, r.count);
    for (const dp::ParamRange& r : model->hook_ranges()) built_ranges.emplace_back(r.offset, r.count);
    BOOST_TEST((shaped == built_ranges));
    BOOST_TEST_REQUIRE(s.blocks.size() == size_t(model->block_count()));
    for (int b = 0; b < model->block_count(); ++b)
      check_block(s.blocks[size_t(b)], model->block(b).shape(), fmt::format("block {}", b));
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(shapes_equal_the_built_models) {
  for (const Config& c : model_layouts::configs()) check_config(c.name, c.spec, c.shape, c.hook_slice);
}

BOOST_AUTO_TEST_CASE(shapes_equal_the_recorded_layouts) {
  // The records were taken from built models: the fingerprint (checkpoints), the layer table and each
  // block's FLOPs must be the same from the shape alone.
  const auto records = model_layouts::records();
  for (const Config& c : model_layouts::configs()) {
    BOOST_TEST_CONTEXT(c.name) {
      const model_layouts::Layout& want = records.at(c.name);
      const dp::ModelShape s = dp::model_shape(c.spec, c.shape);
      BOOST_TEST(s.fingerprint() == want.fingerprint);
      std::vector<model_layouts::LayerRow> rows;
      for (const dp::LayerInfo& i : s.layers())
        rows.push_back({i.name, i.kind, i.param_offset, i.param_count, i.activations_per_sample, i.flops_per_sample});
      BOOST_TEST((rows == want.layers));
      std::vector<std::pair<int64_t, int64_t>> ranges;
      for (const dp::ParamRange& r : s.hook_ranges(c.hook_slice)) ranges.emplace_back(r.offset, r.count);
      BOOST_TEST((ranges == want.hook_ranges));
      BOOST_TEST_REQUIRE(s.blocks.size() == want.block_flops.size());
      for (size_t b = 0; b < s.blocks.size(); ++b) {
        BOOST_TEST(s.blocks[b].forward_flops == want.block_flops[b].first);
        BOOST_TEST(s.blocks[b].backward_flops == want.block_flops[b].second);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(larger_models_equal_the_built_ones) {
  // A deeper GPT with an untied head and a long position table, a wider CNN, a deeper MLP.
  check_config("gpt 6 x 64", model_layouts::gpt(6, 8, 64, 96, false), {.classes = 40, .context = 64});
  check_config("cnn 3 stages x 2", model_layouts::cnn({8, 16, 24}, 2),
               {.features = 3 * 20 * 20, .classes = 7, .channels = 3, .height = 20, .width = 20});
  check_config("mlp 5 hidden", model_layouts::mlp({64, 48, 32, 16, 8}), {.features = 100, .classes = 6});
  check_config("mlp 5 hidden sliced", model_layouts::mlp({64, 48, 32, 16, 8}), {.features = 100, .classes = 6}, 500);
}

BOOST_AUTO_TEST_CASE(bad_options_are_refused_alike) {
  const dp::SampleShape text{.classes = 11, .context = 12};
  dp::ModelSection gpt = model_layouts::gpt(2, 3, 16, 12, true);  // 3 heads do not divide 16
  dp::ModelSection mlp = model_layouts::mlp({8});
  for (const dp::ModelSection& spec : {gpt, mlp}) {
    std::string shaped, built;
    try {
      (void)dp::model_shape(spec, text);
    } catch (const dp::JobError& e) {
      shaped = e.what();
    }
    try {
      (void)dp::make_model(spec, text, 1);
    } catch (const dp::JobError& e) {
      built = e.what();
    }
    BOOST_TEST(!shaped.empty());
    BOOST_TEST(shaped == built);
  }
}
