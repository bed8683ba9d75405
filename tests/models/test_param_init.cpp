// A model's initial parameters by range (models/param_init.h, Model::initial_params): for every model
// configuration tests/models/model_layouts.h lists, every block's range, and ranges cutting through
// tensors, equal the whole model's values there bit for bit; a model built without its parameters
// (make_model's hold_parameters = false, what pipeline ranks get) allocates none, yet has the same
// count, fingerprint and initial values; a stage of it holds its blocks' initial values.
#define BOOST_TEST_MODULE param_init
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <vector>

#include "lib/core/memory_meter.h"
#include "models/model.h"
#include "models/stage.h"
#include "tests/models/model_layouts.h"

BOOST_AUTO_TEST_CASE(ranges_of_the_initial_parameters_are_the_whole_models) {
  for (const model_layouts::Config& c : model_layouts::configs()) {
    if (c.spec.type == dp::ModelType::gpt && c.spec.width > 512) continue;  // keep the test quick
    BOOST_TEST_CONTEXT(c.name) {
      const int64_t start = dp::MemoryMeter::process().live();
      const auto whole = dp::make_model(c.spec, c.shape, /*seed=*/7);
      const int64_t whole_bytes = dp::MemoryMeter::process().live() - start;
      const std::vector<float> all = whole->params_to_host();
      const int64_t P = whole->parameter_count();
      BOOST_TEST(int64_t(all.size()) == P);
      BOOST_TEST((whole->initial_params(0, P) == all));
      for (int b = 0; b < whole->block_count(); ++b) {
        const dp::BlockShape& s = whole->block(b).shape();
        const std::vector<float> mine = whole->initial_params(s.param_offset, s.param_offset + s.param_count);
        BOOST_TEST(std::equal(mine.begin(), mine.end(), all.begin() + s.param_offset), "block " << b);
      }
      for (const auto& [lo, hi] : {std::pair{P / 3, P / 2}, std::pair{int64_t(1), P - 1}}) {  // through tensors
        const std::vector<float> part = whole->initial_params(lo, hi);
        BOOST_TEST(std::equal(part.begin(), part.end(), all.begin() + lo), lo << ".." << hi);
      }

      const int64_t before = dp::MemoryMeter::process().live();
      const auto bare = dp::make_model(c.spec, c.shape, 7, dp::cpu_kernels(), /*hold_parameters=*/false);
      BOOST_TEST(bare->params().empty());
      BOOST_TEST(!bare->holds_parameters());
      BOOST_TEST(bare->parameter_count() == P);
      BOOST_TEST(bare->fingerprint() == whole->fingerprint());
      // All it allocates but the parameters and their gradients.
      BOOST_TEST(dp::MemoryMeter::process().live() - before == whole_bytes - 2 * P * int64_t(sizeof(float)));
      const int last = bare->block_count() - 1;
      if (last < 1 || bare->block(last).shape().shared_count > 0) continue;  // a tied head stays with the embedding
      dp::Stage stage(*bare, 1, last, 1);
      const std::vector<float> held = stage.params_to_host();
      BOOST_TEST(std::equal(held.begin(), held.end(), all.begin() + stage.param_begin()));
    }
  }
}
