// `profile --layers` (lib/measure/layer_profile.h) on the example jobs' models, and the profile file format
// (lib/pipeline/profile.h): every block is timed; its sizes say exactly what a pipeline stage over any
// range of blocks holds per micro-batch (models/stage.h, against the planner's memory model: the
// blocks' saved bytes and the stage's output), and the planner's peak memory of a device is what a
// stage's buffers really hold at their peak, measured by a memory meter (recomputing or not, with one or
// two micro-batches in flight); written and read back unchanged; a time's fixed part is the line
// through its timings, leaning on those far from the profile's size.
#define BOOST_TEST_MODULE layer_profile
#include <boost/test/unit_test.hpp>

#include <filesystem>

#include <fmt/format.h>

#include "lib/core/memory_meter.h"
#include "lib/data/dataset.h"
#include "lib/job/job.h"
#include "lib/pipeline/plan.h"
#include "lib/pipeline/profile.h"
#include "lib/pipeline/plan_internal.h"
#include "lib/measure/layer_profile.h"
#include "lib/optim/optimizer.h"
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
      const bool tied = job.model.tied_head && job.model.type == dp::ModelType::gpt;
      if (tied && first > 0 && last == count - 1) continue;  // refused
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

// Every stage of every block range (recomputing nothing, everything, or its first block; with 1 and 2
// micro-batches in flight) built and run on a fresh model under a memory meter, as a pipeline rank does:
// the stage, an AdamW optimizer for its parameters, the gradient buffers it exchanges with its
// neighbours (the first stage's input comes from the data: its token ids are its slot's input), then
// every micro-batch's forward, then every backward (the peak of 1F1B's warm-up). The meter's peak is
// the planner's device_peak_bytes (within the attention's T x T floats per call, which the model leaves
// out).
void check_metered_peaks(const Job& job) {
  const int64_t n = 3;
  const pipeline::BlockProfile p = measure_block_profile(job, n, 1, 0);
  pipeline::Workload w = pipeline::workload_from_block_profile(p);
  w.state_per_param_byte = 4;  // AdamW
  const pipeline::detail::Prefix prefix(w);
  const DatasetSplits data = load_dataset(job.data, job.job.seed);
  const SampleShape shape = data.train.shape();
  const Kernels& k = cpu_kernels();
  std::vector<uint32_t> idx(static_cast<size_t>(n));
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = uint32_t(i);
  BatchBuffer host;
  const Batch b = gather_batch(data.train, idx, host);
  const int count = int(p.blocks.size());
  const double slack = shape.is_text() ? 4.0 * double(shape.context * shape.context) : 0.0;
  int checked = 0;
  for (int first = 0; first < count; ++first)
    for (int last = first; last < count; ++last)
      for (int mode = 0; mode < 3; ++mode)
        for (int in_flight = 1; in_flight <= 2; ++in_flight) {
          if (job.model.tied_head && job.model.type == dp::ModelType::gpt && first > 0 && last == count - 1) continue;
          std::vector<bool> flags(size_t(last - first + 1), mode == 1);
          if (mode == 2) flags[0] = true;
          std::vector<int> recompute;
          for (int i = first; i <= last; ++i)
            if (flags[size_t(i - first)]) recompute.push_back(i);
          auto model = make_model(job.model, shape, job.job.seed);  // its blocks' scratch not yet grown
          auto meter = std::make_shared<MemoryMeter>();
          {
            const MeterScope scope(meter);
            Stage stage(*model, first, last, in_flight, flags);
            const auto opt = make_optimizer(job.optim, stage.param_end() - stage.param_begin(), k);
            const bool is_last = last + 1 == count;
            Buffer<float> dy(k, size_t(is_last ? 0 : n * stage.out_floats())), dx(k, size_t(first > 0 ? n * stage.in_floats() : 0));
            std::vector<Buffer<int32_t>> tokens;
            for (int s = 0; s < in_flight; ++s) {
              if (first > 0) {
                stage.input(s, n);
              } else if (b.x) {
                stage.upload_input(s, std::span(b.x, size_t(n * stage.in_floats())));
              } else {
                tokens.emplace_back(k, size_t(n * shape.context));
                tokens.back().upload(std::span(b.tokens, size_t(n * shape.context)));
              }
              stage.forward(s, tokens.empty() ? nullptr : tokens.back().data(), b.targets, n, 0.1f);
            }
            for (int s = 0; s < in_flight; ++s)
              stage.backward(s, is_last ? nullptr : dy.data(), first > 0 ? dx.data() : nullptr, s > 0);
          }
          const double predicted = pipeline::detail::device_peak_bytes(w, prefix, first, last, in_flight, n, recompute);
          const double measured = double(meter->peak());
          BOOST_TEST_CONTEXT("blocks " << first << "-" << last << ", recompute " << mode << ", in flight " << in_flight) {
            BOOST_TEST(measured >= predicted);
            BOOST_TEST(measured <= predicted + slack);
          }
          ++checked;
        }
  BOOST_TEST(checked > 0);
}

}  // namespace

// A time's fixed part from the line through the profile's size and the others: exact on a line, within
// [0, t_n], and on the slow-link job's weight-bound layer as measured (the same time at 2 and 16 samples,
// 1.99 ms at 64) the line a stage of 64 samples is priced by is within a tenth of 64's time, where the
// two nearer timings alone priced it at 1.04.
BOOST_AUTO_TEST_CASE(a_times_fixed_part_leans_on_the_timings_far_from_the_profiles_size) {
  auto on_line = [](int64_t m) { return 0.5 + 0.02 * double(m); };
  BOOST_TEST(profile_fixed_ms(on_line(16), 16, {{2, on_line(2)}, {64, on_line(64)}}) == 0.5,
             boost::test_tools::tolerance(1e-12));
  BOOST_TEST(profile_fixed_ms(1.0, 16, {}) == 0.0);
  BOOST_TEST(profile_fixed_ms(1.0, 16, {{16, 3.0}}) == 0.0);
  BOOST_TEST(profile_fixed_ms(1.0, 16, {{2, 0.0}, {64, 10.0}}) == 0.0);  // a line below 0 at 0 samples
  BOOST_TEST(profile_fixed_ms(1.0, 16, {{2, 5.0}, {64, 0.5}}) == 1.0);   // falling: all of it fixed
  const double t16 = 1.04, fixed = profile_fixed_ms(t16, 16, {{2, 1.04}, {64, 1.99}});
  const double at64 = fixed + 64.0 / 16.0 * (t16 - fixed);
  BOOST_TEST(at64 == 1.99, boost::test_tools::tolerance(0.10));
  BOOST_TEST(profile_fixed_ms(t16, 16, {{2, 1.04}}) == t16);  // the nearer two alone: all fixed, flat
}

BOOST_AUTO_TEST_CASE(the_planners_peak_memory_is_what_a_stage_holds) {
  check_metered_peaks(example("quickstart", {"model.hidden=[32,16]"}));
  check_metered_peaks(example("cnn", {"model.channels=[4,8]", "model.blocks=1"}));
  check_metered_peaks(example("gpt", {"model.layers=2", "model.width=16", "model.heads=2", "model.context=16",
                                      "data.context=16", "model.tied_head=false"}));
}

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
  BOOST_TEST(q.timed_resting == 1.0);  // nothing emulated: timed back to back
  fs::remove(path);
}

// A job that emulates slow devices gets its times scaled to its fastest emulated rank's steps (a whole
// step timed resting after each as that rank does, against back to back), and the profile says so:
// described speeds [1, 0.5] at slowdown 3 make the fastest rank's factor 3; the ratio is at least 1 and
// every fixed part stays within its time; read back from the file it wrote.
BOOST_AUTO_TEST_CASE(an_emulated_jobs_times_are_scaled_to_its_fastest_ranks_rested_steps) {
  const Job job = example("quickstart", {"model.hidden=[32,16]", "launch.ranks=2", "cluster.speeds=[1,0.5]",
                                         "cluster.emulate.as_described=true", "cluster.emulate.slowdown=[3,3]"});
  const pipeline::BlockProfile p = measure_block_profile(job, 4, 2, 1);
  BOOST_TEST(p.timed_resting == 3.0);
  BOOST_TEST(p.rest_scale >= 1.0);
  BOOST_TEST(p.timed_on() == fmt::format("cpu, x{:.3g} for ranks emulated at 3x", p.rest_scale));
  for (const pipeline::BlockRow& b : p.blocks) {
    BOOST_TEST(b.forward_ms > 0);
    BOOST_TEST(b.forward_fixed_ms >= 0);
    BOOST_TEST(b.forward_fixed_ms <= b.forward_ms);
    BOOST_TEST(b.backward_fixed_ms <= b.backward_ms);
  }
  const fs::path path = fs::temp_directory_path() / "dptrain-test-layers-resting.toml";
  pipeline::write_block_profile(path.string(), p);
  const pipeline::BlockProfile q = pipeline::read_block_profile(path.string());
  BOOST_TEST(q.timed_resting == 3.0);
  BOOST_TEST(q.rest_scale == p.rest_scale, boost::test_tools::tolerance(1e-5));
  fs::remove(path);
}
