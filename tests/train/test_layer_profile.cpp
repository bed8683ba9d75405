// `profile --layers` (lib/train/layer_profile.h) on the example jobs' models, and the profile file format
// (lib/pipeline/profile.h): every block is timed; its sizes say exactly what a pipeline stage over any
// range of blocks holds per micro-batch (models/stage.h, against the planner's memory model: the
// blocks' saved bytes and the stage's output); written and read back unchanged.
#define BOOST_TEST_MODULE layer_profile
#include <boost/test/unit_test.hpp>

#include <filesystem>

#include "lib/data/dataset.h"
#include "lib/job/job.h"
#include "lib/pipeline/plan.h"
#include "lib/pipeline/profile.h"
#include "lib/train/layer_profile.h"
#include "models/stage.h"

using namespace dp;
namespace fs = std::filesystem;

namespace {

Job example(const std::string& name, const std::vector<std::string>& overrides) {
  return load_job(std::string(DPTRAIN_SOURCE_DIR) + "/configs/" + name + ".toml", overrides);
}

void check_sizes_against_stages(const Job& job) {
  const int64_t n = 3;
  const pipeline::BlockProfile p = measure_block_profile(job, n, 2, 1);
  const DatasetSplits data = load_dataset(job.data, job.job.seed);
  auto model = make_model(job.model, data.train.shape(), job.job.seed);
  const int count = model->block_count();
  BOOST_TEST_REQUIRE(int(p.blocks.size()) == count);
  for (const pipeline::BlockRow& b : p.blocks) {
    BOOST_TEST(b.forward_ms > 0);
    BOOST_TEST(b.backward_ms > 0);
  }
  for (int first = 0; first < count; ++first)
    for (int last = first; last < count; ++last) {
      if (job.model.tied_head && job.model.type == "gpt" && first > 0 && last == count - 1) continue;  // refused
      double kept = last + 1 < count ? p.blocks[size_t(last)].output_bytes : 0.0;
      for (int b = first; b <= last; ++b) kept += p.blocks[size_t(b)].saved_bytes;
      const Stage stage(*model, first, last, 1);
      BOOST_TEST_CONTEXT("blocks " << first << "-" << last) {
        BOOST_TEST(double(stage.slot_bytes(n)) == double(n) * kept);
      }
    }
  double params = 0;
  for (const pipeline::BlockRow& b : p.blocks) params += b.param_bytes;
  BOOST_TEST(params == 4.0 * double(model->params().size()));  // a tied head's matrix counted once
}

}  // namespace

BOOST_AUTO_TEST_CASE(mlp_blocks_hold_what_they_say) {
  check_sizes_against_stages(example("quickstart", {"model.hidden=[32,16]"}));
}

BOOST_AUTO_TEST_CASE(cnn_blocks_hold_what_they_say) {
  check_sizes_against_stages(example("cnn", {"model.channels=[4,8]", "model.blocks=1"}));
}

BOOST_AUTO_TEST_CASE(gpt_blocks_hold_what_they_say) {
  for (const char* tied : {"model.tied_head=true", "model.tied_head=false"})
    check_sizes_against_stages(example("gpt", {"model.layers=2", "model.width=16", "model.heads=2",
                                               "model.context=16", "data.context=16", tied}));
}

BOOST_AUTO_TEST_CASE(profiles_round_trip_and_become_a_workload) {
  const Job job = example("quickstart", {"model.hidden=[32,16]"});
  const pipeline::BlockProfile p = measure_block_profile(job, 4, 2, 1);
  const fs::path path = fs::temp_directory_path() / "dptrain-test-layers.toml";
  pipeline::write_block_profile(path.string(), p);
  BOOST_TEST(pipeline::is_block_profile(path.string()));
  const pipeline::BlockProfile q = pipeline::read_block_profile(path.string());
  BOOST_TEST(q.micro_batch == 4);
  BOOST_TEST(q.model == p.model);
  BOOST_TEST_REQUIRE(q.blocks.size() == p.blocks.size());
  for (size_t i = 0; i < p.blocks.size(); ++i) {
    BOOST_TEST(q.blocks[i].name == p.blocks[i].name);
    BOOST_TEST(q.blocks[i].forward_ms == p.blocks[i].forward_ms, boost::test_tools::tolerance(1e-5));
    BOOST_TEST(q.blocks[i].backward_fixed_ms == p.blocks[i].backward_fixed_ms, boost::test_tools::tolerance(1e-5));
    BOOST_TEST(q.blocks[i].saved_bytes == p.blocks[i].saved_bytes);
    // The fixed part a micro-batch of any size pays is part of the time.
    BOOST_TEST(p.blocks[i].forward_fixed_ms >= 0);
    BOOST_TEST(p.blocks[i].forward_fixed_ms <= p.blocks[i].forward_ms);
    BOOST_TEST(p.blocks[i].backward_fixed_ms <= p.blocks[i].backward_ms);
  }
  // A micro-batch of 4 costs the profile's time: 4 samples' worth plus the fixed part.
  const pipeline::Workload w = pipeline::workload_from_block_profile(q);
  BOOST_TEST(4 * w.blocks[0].forward_s + w.blocks[0].forward_fixed_s == q.blocks[0].forward_ms * 1e-3,
             boost::test_tools::tolerance(1e-9));
  BOOST_TEST(w.blocks[0].backward_fixed_s == q.blocks[0].backward_fixed_ms * 1e-3, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(w.input_bytes == 4.0 * 784);
  fs::remove(path);
}
