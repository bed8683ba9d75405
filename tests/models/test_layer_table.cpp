// The layer table (Model::layers()) and the hook ranges against the blocks they are read from, for every
// configuration of tests/models/model_layouts.h, so the table can never again tell another story than
// the blocks the model runs:
//  - the blocks' parameter ranges tile the parameter buffer, in order;
//  - each block's layers with parameters tile the block's range, in order; a layer without parameters
//    sits where the previous one ended, or (a tied head) on the parameters its block shares;
//  - each block's layers' FLOPs add up to its forward FLOPs, and all of them to the model's;
//  - the hook ranges are the layers' with parameters (or their slices) and tile the buffer, in order.
#define BOOST_TEST_MODULE layer_table
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <vector>

#include "models/model.h"
#include "tests/models/model_layouts.h"

namespace {

namespace tt = boost::test_tools;
using model_layouts::Config;

std::unique_ptr<dp::Model> build(const Config& c, int64_t hook_slice) {
  auto model = dp::make_model(c.spec, c.shape, /*seed=*/1);
  model->set_hook_slice(hook_slice);
  return model;
}

// One block's layers against its shape.
void check_block(const dp::BlockShape& b) {
  BOOST_TEST_REQUIRE(!b.layers.empty(), b.name << " lists no layers");
  int64_t at = b.param_offset;
  double flops = 0;
  for (const dp::LayerInfo& l : b.layers) {
    const bool shared = b.shared_count > 0 && l.param_offset == b.shared_offset;
    BOOST_TEST((l.param_offset == at || (l.param_count == 0 && shared)),
               l.name << " at " << l.param_offset << ", not where its block's layers reached: " << at);
    at += l.param_count;
    flops += l.flops_per_sample;
  }
  BOOST_TEST(at == b.param_offset + b.param_count, b.name << ": its layers' parameters end at " << at);
  BOOST_TEST(flops == b.forward_flops, tt::tolerance(1e-12));
}

// Ranges that cover [0, total) one after another.
void check_tiling(const std::vector<dp::ParamRange>& ranges, int64_t total) {
  int64_t at = 0;
  for (const dp::ParamRange& r : ranges) {
    BOOST_TEST(r.offset == at);
    BOOST_TEST(r.count > 0);
    at = r.end();
  }
  BOOST_TEST(at == total);
}

}  // namespace

BOOST_AUTO_TEST_CASE(blocks_tile_the_parameters_and_their_layers_tile_the_blocks) {
  for (const Config& c : model_layouts::configs()) {
    BOOST_TEST_CONTEXT(c.name) {
      const auto model = build(c, 0);
      std::vector<dp::ParamRange> blocks;
      std::vector<dp::LayerInfo> layers;
      double flops = 0;
      for (int i = 0; i < model->block_count(); ++i) {
        const dp::BlockShape& b = model->block(i).shape();
        check_block(b);
        blocks.push_back({b.param_offset, b.param_count});
        layers.insert(layers.end(), b.layers.begin(), b.layers.end());
        flops += b.forward_flops;
      }
      check_tiling(blocks, int64_t(model->params().size()));
      const std::vector<dp::LayerInfo> table = model->layers();
      BOOST_TEST_REQUIRE(table.size() == layers.size());
      for (size_t i = 0; i < table.size(); ++i) {
        BOOST_TEST(table[i].name == layers[i].name);
        BOOST_TEST(table[i].param_offset == layers[i].param_offset);
        BOOST_TEST(table[i].param_count == layers[i].param_count);
        BOOST_TEST(table[i].flops_per_sample == layers[i].flops_per_sample);
      }
      BOOST_TEST(model->flops_per_sample() == flops, tt::tolerance(1e-12));
    }
  }
}

BOOST_AUTO_TEST_CASE(hook_ranges_are_the_layers_or_their_slices_in_order) {
  for (const Config& c : model_layouts::configs()) {
    BOOST_TEST_CONTEXT(c.name) {
      const auto whole = build(c, 0);
      std::vector<dp::ParamRange> with_parameters;
      for (const dp::LayerInfo& l : whole->layers())
        if (l.param_count > 0) with_parameters.push_back({l.param_offset, l.param_count});
      BOOST_TEST((whole->hook_ranges() == with_parameters));
      check_tiling(whole->hook_ranges(), int64_t(whole->params().size()));
      for (int64_t slice : {c.hook_slice, int64_t(1000)}) {
        const auto sliced = build(c, slice);
        check_tiling(sliced->hook_ranges(), int64_t(sliced->params().size()));
        for (const dp::ParamRange& r : sliced->hook_ranges()) {  // each inside one layer's range
          auto holds = [&](const dp::ParamRange& l) { return r.offset >= l.offset && r.end() <= l.end(); };
          const bool inside = std::any_of(with_parameters.begin(), with_parameters.end(), holds);
          BOOST_TEST(inside, "hook range " << r.offset << "+" << r.count << " crosses a layer boundary");
        }
      }
    }
  }
}
