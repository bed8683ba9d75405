// The whole model's memory levers (models/model.h), for every model type: forward_backward in
// micro-batches (dividing the batch or not) gives the gradients and loss of one pass up to float rounding,
// and its gradients-ready hook hears only the last micro-batch, as one pass's; recomputing every block gives
// them bit for bit; and the metered peak of the buffers drops with either lever.
#define BOOST_TEST_MODULE model_memory_levers
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <memory>

#include "lib/core/memory_meter.h"
#include "tests/models/model_testing.h"

using namespace dp;

namespace {

constexpr int64_t kBatch = 7;

struct Pass {
  StepStats stats;
  std::vector<float> grads;
  std::vector<int64_t> announced;  // the gradients-ready hook's offsets, in order
  int64_t peak_bytes = 0;          // the model's buffers, built and run under a meter of their own
};

// A fresh model (its buffers only grow, so each pass meters its own), with the gradients of an earlier
// batch left in place to show that the first micro-batch overwrites them.
Pass run(const ModelSection& spec, const SampleShape& shape, int64_t micro_batch, bool recompute) {
  auto meter = std::make_shared<MemoryMeter>();
  const MeterScope scope(meter);
  auto model = make_model(spec, shape, 5);
  model->set_recompute(recompute ? TrainRecompute::all : TrainRecompute::none);
  Data old_data, d;
  model->forward_backward(random_batch(shape, 2, old_data), 3.0f);
  Pass p;
  model->on_gradients_ready([&p](int64_t offset) { p.announced.push_back(offset); });
  const Batch b = random_batch(shape, kBatch, d);
  meter->reset_peak();
  p.stats = model->forward_backward(b, 1.0f / float(kBatch), micro_batch);
  p.peak_bytes = meter->peak();
  p.grads = model->grads_to_host();
  return p;
}

// |a - b| / |b| over the whole vector: rounding noise, not the relative error of gradients near zero.
double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  BOOST_TEST_REQUIRE(a.size() == b.size());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    norm += double(b[i]) * b[i];
  }
  return std::sqrt(diff / norm);
}

}  // namespace

BOOST_AUTO_TEST_CASE(micro_batches_accumulate_the_gradients_of_one_pass) {
  for (const auto& [spec, shape] : small_models()) {
    const Pass whole = run(spec, shape, 0, false);
    BOOST_TEST_REQUIRE(!whole.announced.empty());
    BOOST_TEST(whole.announced.back() == 0);
    for (const int64_t micro : {int64_t(1), int64_t(2), int64_t(3), int64_t(6), kBatch, int64_t(100)}) {
      BOOST_TEST_CONTEXT(spec.type << ", micro-batches of " << micro) {
        const Pass parts = run(spec, shape, micro, false);
        const double diff = relative_difference(parts.grads, whole.grads);
        BOOST_TEST_MESSAGE(spec.type << " micro_batch " << micro << ": relative gradient difference " << diff);
        BOOST_TEST(diff < 1e-5);
        BOOST_TEST(std::abs(parts.stats.loss_sum - whole.stats.loss_sum) <= 1e-5 * std::abs(whole.stats.loss_sum));
        BOOST_TEST(parts.stats.count == whole.stats.count);
        BOOST_TEST(parts.stats.correct == whole.stats.correct);
        // The hook hears the last micro-batch only: what one pass announces, once.
        BOOST_TEST(parts.announced == whole.announced, boost::test_tools::per_element());
        if (micro >= kBatch) BOOST_TEST(parts.grads == whole.grads, boost::test_tools::per_element());
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(recomputation_gives_the_same_gradients_bit_for_bit) {
  for (const auto& [spec, shape] : small_models()) {
    for (const int64_t micro : {int64_t(0), int64_t(3)}) {
      BOOST_TEST_CONTEXT(spec.type << ", micro_batch " << micro) {
        const Pass kept = run(spec, shape, micro, false), rebuilt = run(spec, shape, micro, true);
        BOOST_TEST(rebuilt.grads == kept.grads, boost::test_tools::per_element());
        BOOST_TEST(rebuilt.stats.loss_sum == kept.stats.loss_sum);
        BOOST_TEST(rebuilt.announced == kept.announced, boost::test_tools::per_element());
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(either_lever_lowers_the_metered_peak) {
  for (const auto& [spec, shape] : small_models()) {
    BOOST_TEST_CONTEXT(spec.type) {
      const int64_t plain = run(spec, shape, 0, false).peak_bytes;
      const int64_t recomputed = run(spec, shape, 0, true).peak_bytes;
      const int64_t small = run(spec, shape, 2, false).peak_bytes;
      const int64_t both = run(spec, shape, 2, true).peak_bytes;
      BOOST_TEST_MESSAGE(spec.type << " metered peak: " << plain << " bytes, recompute all " << recomputed
                                   << ", micro_batch 2 " << small << ", both " << both);
      BOOST_TEST(small < plain);
      BOOST_TEST(both < recomputed);
      // The MLP's head is its only block that saves activations (its loss gradient): nothing to gain.
      const bool saves_little = spec.type == ModelType::mlp;
      BOOST_TEST(recomputed <= plain);
      BOOST_TEST(both <= small);
      if (!saves_little) {
        BOOST_TEST(recomputed < plain);
        BOOST_TEST(both < small);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(an_empty_batch_zeroes_the_gradients_and_announces_them) {
  const auto models = small_models();
  const auto& [spec, shape] = models.front();
  auto model = make_model(spec, shape, 5);
  Data d;
  model->forward_backward(random_batch(shape, 3, d), 1.0f, 2);
  std::vector<int64_t> announced;
  model->on_gradients_ready([&](int64_t offset) { announced.push_back(offset); });
  BOOST_TEST(model->forward_backward({0, nullptr, nullptr, nullptr}, 1.0f, 2).count == 0);
  const std::vector<float> g = model->grads_to_host();
  BOOST_TEST(std::all_of(g.begin(), g.end(), [](float v) { return v == 0.0f; }));
  BOOST_TEST(announced == std::vector<int64_t>{0}, boost::test_tools::per_element());
}
