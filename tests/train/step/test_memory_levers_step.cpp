// [train] micro_batch and recompute in a data-parallel replica's step (timed_step and StepUpdate,
// lib/train/step/step_update.h: what strategy "data" and every CGP group run), with ranks as threads of
// one process: each rank's share runs in micro-batches, gradients accumulated, and the gradient sync
// (MRA's buckets reduce-scattered while backward runs, plain allreduce after it) must still see only the
// whole share's gradients, once. After a few steps on uneven shares, the parameters equal those of the
// whole-share run within float rounding (micro-batches) or bit for bit (recomputation), for the MLP, the
// CNN and the GPT. SGD, not AdamW: Adam's update of a gradient that is rounding noise (the GPT's key
// biases, whose true gradient is zero) is +-lr whatever the noise, which would hide what is compared.
#define BOOST_TEST_MODULE memory_levers_step
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <string>

#include "kernels/cpu/ops.h"
#include "lib/balance/emulate.h"
#include "lib/comm/thread_communicator.h"
#include "lib/core/rng.h"
#include "lib/optim/optimizer.h"
#include "lib/train/step/step_update.h"
#include "tests/models/model_testing.h"

using namespace dp;

namespace {

constexpr int64_t kSamples = 40, kGlobal = 11, kSteps = 3;

// kSamples random samples of `shape` (text: a random token sequence cut into windows).
Dataset dataset_of(const SampleShape& shape) {
  Dataset d;
  d.count = kSamples;
  d.features = shape.features;
  d.classes = shape.classes;
  d.channels = shape.channels, d.height = shape.height, d.width = shape.width;
  d.context = shape.context;
  Rng rng(23);
  if (shape.is_text()) {
    for (int64_t i = 0; i < kSamples * shape.context + 1; ++i)
      d.text.push_back(int32_t(rng.next() % uint64_t(shape.classes)));
    return d;
  }
  for (int64_t i = 0; i < kSamples * shape.features; ++i) d.x.push_back(float(rng.uniform() * 2 - 1));
  for (int64_t i = 0; i < kSamples; ++i) d.y.push_back(int32_t(rng.next() % uint64_t(shape.classes)));
  return d;
}

// [parallel.comm] and the levers; small MRA buckets, so that several are in flight during backward.
Job job_with(const std::string& comm, int64_t micro_batch, const std::string& recompute) {
  return parse_job("[job]\nname = \"levers\"\n[data]\ndataset = \"synthetic\"\n[optim]\nname = \"sgd\"\nlr = 0.05\n"
                   "momentum = 0.9\n[train]\nglobal_batch = 11\nthreads = 1\nmicro_batch = " +
                       std::to_string(micro_batch) + "\nrecompute = \"" + recompute + "\"\n[parallel.comm]\n" + comm,
                   "levers.toml", {});
}

const std::string kMraOverlap = "algorithm = \"mra\"\nbucket_mb = 0.002\nfirst_bucket_mb = 0.0004\n";
const std::string kMraForward = kMraOverlap + "overlap_forward = true\n";
const std::string kNative = "algorithm = \"native\"\n";

// Every rank's parameters after kSteps steps of `job` on `ranks` thread ranks: step s trains samples
// [s * kGlobal, (s + 1) * kGlobal), divided unevenly (rank r takes r + 1 parts).
std::vector<std::vector<float>> train(const Job& job, const ModelSection& spec, const Dataset& data, int ranks) {
  std::vector<std::vector<float>> result(static_cast<size_t>(ranks));
  std::mutex m;
  run_thread_ranks(ranks, [&](Communicator& comm) {
    auto model = make_model(spec, data.shape(), 3);
    StepUpdate update(job, comm, *model, nullptr);
    auto opt = make_optimizer(job.optim, update.state_count());
    SlowdownEmulator emulator(job, comm.rank());
    BatchBuffer buffer;
    const int parts = ranks * (ranks + 1) / 2;
    int64_t begin = 0;
    for (int r = 0; r < comm.rank(); ++r) begin += kGlobal * (r + 1) / parts;
    const int64_t n = comm.rank() + 1 == ranks ? kGlobal - begin : kGlobal * (comm.rank() + 1) / parts;
    for (int64_t step = 0; step < kSteps; ++step) {
      std::vector<uint32_t> mine(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) mine[size_t(i)] = uint32_t(step * kGlobal + begin + i);
      const float scale = 1.0f / float(kGlobal * std::max<int64_t>(1, data.context));  // per loss term
      timed_step(update, *opt, 0.05, *model, data, mine, buffer, scale, emulator, step,
                 std::chrono::steady_clock::now());
    }
    update.settle();
    std::lock_guard lock(m);
    result[size_t(comm.rank())] = model->params_to_host();
  });
  return result;
}

double max_relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  BOOST_TEST_REQUIRE(a.size() == b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(double(a[i]) - b[i]) / std::max(1e-3, std::abs(double(b[i]))));
  return worst;
}

}  // namespace

BOOST_AUTO_TEST_CASE(micro_batches_train_like_whole_shares) {
  cpu::set_compute_threads(1);
  for (const auto& [spec, shape] : small_models()) {
    const Dataset data = dataset_of(shape);
    const std::vector<std::pair<std::string, std::string>> modes = {
        {"native", kNative}, {"mra overlap", kMraOverlap}, {"mra overlap_forward", kMraForward}};
    for (const auto& [mode, comm] : modes) {
      const int ranks = 2;
      const auto whole = train(job_with(comm, 0, "none"), spec, data, ranks);
      BOOST_TEST_REQUIRE(whole[1] == whole[0], "ranks disagree");
      // Shares of 3 and 8 samples: micro-batches of 2 divide neither, of 4 one; 1 runs sample by sample.
      for (const int64_t micro : {1, 2, 4}) {
        BOOST_TEST_CONTEXT(spec.type << ", " << mode << ", micro_batch " << micro) {
          const auto parts = train(job_with(comm, micro, "none"), spec, data, ranks);
          BOOST_TEST(parts[1] == parts[0], "ranks disagree");
          const double worst = max_relative_difference(parts[0], whole[0]);
          BOOST_TEST_MESSAGE(spec.type << ", " << mode << ", micro_batch " << micro
                                       << ": max relative parameter difference " << worst);
          BOOST_TEST(worst < 1e-5);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(recomputation_trains_bit_for_bit_alike) {
  cpu::set_compute_threads(1);
  for (const auto& [spec, shape] : small_models()) {
    const Dataset data = dataset_of(shape);
    for (const int64_t micro : {0, 2}) {
      BOOST_TEST_CONTEXT(spec.type << ", micro_batch " << micro) {
        const auto kept = train(job_with(kMraOverlap, micro, "none"), spec, data, 2);
        const auto rebuilt = train(job_with(kMraOverlap, micro, "all"), spec, data, 2);
        BOOST_TEST(rebuilt[0] == kept[0], boost::test_tools::per_element());
        BOOST_TEST(rebuilt[1] == kept[1], boost::test_tools::per_element());
      }
    }
  }
}
