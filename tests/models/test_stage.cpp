// Pipeline stages (models/stage.h) against the whole model in one process: micro-batches accumulated on
// one stage, two stages handing activations and gradients to each other in a 1F1B order with two
// micro-batches in flight, and recomputation, all give the whole batch's loss and gradients; a stage holds
// only its own parameters, and its slots what its blocks say they keep. The MLP, the CNN and the GPT.
#define BOOST_TEST_MODULE stage
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>

#include "lib/core/error.h"
#include "models/cnn.h"
#include "models/gpt.h"
#include "models/mlp.h"
#include "models/stage.h"
#include "tests/models/model_testing.h"

using namespace dp;
namespace tt = boost::test_tools;

namespace {

constexpr int64_t kFeatures = 20, kClasses = 5, kBatch = 12, kMicro = 4;

struct Whole {
  std::vector<float> grads;
  StepStats stats;
};

Whole whole_batch(Mlp& model, const Batch& b) {
  Whole w;
  w.stats = model.forward_backward(b, 1.0f / float(b.n));
  w.grads = model.grads_to_host();
  return w;
}

// Samples [first, first + n) of the batch into the stage's slot.
void feed(Stage& s, int slot, const Data& d, int64_t first, int64_t n) {
  float* in = s.input(slot, n);
  std::copy_n(d.x.data() + first * kFeatures, n * kFeatures, in);  // CPU kernels: host memory
}

// Within fp32 rounding of sums taken in another order (micro-batch by micro-batch).
void expect_close(const std::vector<float>& got, const std::vector<float>& want, double tolerance = 1e-5) {
  BOOST_TEST_REQUIRE(got.size() == want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(double(got[i]) - want[i]) / std::max(1e-3, std::abs(double(want[i]))));
  BOOST_TEST(worst < tolerance);
}

std::vector<float> concat(std::span<float> a, std::span<float> b) {
  std::vector<float> out(a.begin(), a.end());
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(one_stage_accumulating_micro_batches_is_the_whole_batch) {
  Mlp model({32, 24, 16}, kFeatures, kClasses, 3);
  Data d;
  const Batch b = random_batch({.features = kFeatures, .classes = kClasses}, kBatch, d);
  const Whole ref = whole_batch(model, b);
  for (bool recompute : {false, true}) {
    Stage s(model, 0, model.block_count() - 1, 1, std::vector<bool>(size_t(model.block_count()), recompute));
    BOOST_TEST(s.params().size() == model.params().size());
    double loss = 0;
    int64_t correct = 0;
    for (int64_t m = 0; m < kBatch / kMicro; ++m) {
      feed(s, 0, d, m * kMicro, kMicro);
      const StepStats st = s.forward(0, nullptr, d.targets.data() + m * kMicro, kMicro, 1.0f / float(kBatch));
      loss += st.loss_sum, correct += st.correct;
      BOOST_TEST(s.output(0) == nullptr);  // the last stage sends nothing on
      s.backward(0, nullptr, nullptr, m > 0);
    }
    BOOST_TEST(loss == ref.stats.loss_sum, tt::tolerance(1e-6));
    BOOST_TEST(correct == ref.stats.correct);
    expect_close(std::vector<float>(s.grads().begin(), s.grads().end()), ref.grads);
  }
}

BOOST_AUTO_TEST_CASE(recomputing_the_head_gives_the_same_gradients_exactly) {
  Mlp model({16}, kFeatures, kClasses, 5);
  Data d;
  random_batch({.features = kFeatures, .classes = kClasses}, kMicro, d);
  std::vector<std::vector<float>> grads;
  for (bool recompute : {false, true}) {
    Stage s(model, 0, 1, 1, {false, recompute});
    feed(s, 0, d, 0, kMicro);
    s.forward(0, nullptr, d.targets.data(), kMicro, 0.25f);
    s.backward(0, nullptr, nullptr, false);
    grads.emplace_back(s.grads().begin(), s.grads().end());
  }
  BOOST_TEST(grads[0] == grads[1], tt::per_element());
}

BOOST_AUTO_TEST_CASE(a_slot_holds_what_the_blocks_keep) {
  Mlp model({32, 24}, kFeatures, kClasses, 6);
  // Blocks: fc1 (20 -> 32), relu+fc2 (32 -> 24), head (24 -> 5, keeping its 5 loss gradients).
  BOOST_TEST(model.block_count() == 3);
  BOOST_TEST(model.block(2).shape().saved_floats == kClasses);
  BOOST_TEST(model.block(1).shape().saved_floats == 0);  // ReLU recomputed from its input
  const Stage all(model, 0, 2, 1), recomputing(model, 0, 2, 1, {false, false, true});
  BOOST_TEST(all.slot_bytes(kMicro) == 4 * kMicro * (20 + 32 + 24 + kClasses));
  BOOST_TEST(recomputing.slot_bytes(kMicro) == 4 * kMicro * (20 + 32 + 24));
  // The first block skips the input's gradient: its backward costs one matmul, the others' two.
  BOOST_TEST(model.block(0).shape().backward_flops == model.block(0).shape().forward_flops);
  BOOST_TEST(model.block(1).shape().backward_flops > 1.9 * model.block(1).shape().forward_flops);
}

// Any model made of blocks, cut after block `cut` into two stages, 1F1B over three micro-batches, with
// and without every block recomputed: the whole batch's loss and gradients.
void check_two_stages(Model& model, const SampleShape& shape, int cut) {
  Data d;
  const Batch b = random_batch(shape, kBatch, d);
  const std::vector<float> params = model.params_to_host();
  const StepStats ref_stats =
      model.forward_backward(b, 1.0f / float(kBatch * (shape.is_text() ? shape.context : 1)));
  const std::vector<float> ref = model.grads_to_host();
  const int n_blocks = model.block_count();
  for (bool recompute : {false, true}) {
    Stage first(model, 0, cut, 2, std::vector<bool>(size_t(cut + 1), recompute));
    Stage second(model, cut + 1, n_blocks - 1, 1, std::vector<bool>(size_t(n_blocks - cut - 1), recompute));
    std::vector<float> dx(size_t(kMicro * second.in_floats()));
    double loss = 0;
    // Per sample: the features (or, for text, T token ids) and the targets (1, or T next tokens).
    const int64_t per = shape.is_text() ? shape.context : 1;
    const float scale = 1.0f / float(kBatch * per);
    auto forward_first = [&](int64_t m) {
      if (shape.is_text()) {
        first.forward(int(m % 2), d.tokens.data() + m * kMicro * per, nullptr, kMicro, scale);
        return;
      }
      std::copy_n(d.x.data() + m * kMicro * shape.features, kMicro * shape.features, first.input(int(m % 2), kMicro));
      first.forward(int(m % 2), nullptr, nullptr, kMicro, scale);
    };
    auto through_second = [&](int64_t m) {
      std::copy_n(first.output(int(m % 2)), kMicro * first.out_floats(), second.input(0, kMicro));
      loss += second.forward(0, nullptr, d.targets.data() + m * kMicro * per, kMicro, scale).loss_sum;
      second.backward(0, nullptr, dx.data(), m > 0);
      first.backward(int(m % 2), dx.data(), nullptr, m > 0);
    };
    forward_first(0);
    forward_first(1);
    through_second(0);
    forward_first(2);
    through_second(1);
    through_second(2);
    BOOST_TEST(loss == ref_stats.loss_sum, tt::tolerance(1e-6));
    expect_close(concat(first.grads(), second.grads()), ref, 1e-4);  // convolutions: long sums
    BOOST_TEST((params == model.params_to_host()));  // stages copy, never write
  }
}

BOOST_AUTO_TEST_CASE(an_mlp_cut_into_two_stages_is_the_whole_batch) {
  Mlp model({32, 24, 16}, kFeatures, kClasses, 4);
  Stage first(model, 0, 1, 2), second(model, 2, 3, 1);
  BOOST_TEST(first.param_begin() == 0);
  BOOST_TEST(first.param_end() == second.param_begin());
  BOOST_TEST(second.param_end() == int64_t(model.params().size()));
  BOOST_TEST(first.params().size() == size_t(first.param_end()));  // only its own parameters
  for (int cut : {0, 1, 2}) {
    BOOST_TEST_CONTEXT("cut after block " << cut) check_two_stages(model, {.features = kFeatures, .classes = kClasses}, cut);
  }
}

BOOST_AUTO_TEST_CASE(a_cnn_cut_into_two_stages_is_the_whole_batch) {
  const auto [spec, shape] = small_models()[1];  // channels 4, 8; one block a stage; 1 x 8 x 8 images
  Cnn model(spec, shape, 7);
  // stem, stage1.block1, stage2.down, stage2.block1, head.
  BOOST_TEST_REQUIRE(model.block_count() == 5);
  for (int cut : {0, 1, 3}) {
    BOOST_TEST_CONTEXT("cut after block " << cut) check_two_stages(model, shape, cut);
  }
}

// model_testing.h's small GPT (2 layers, 12-token samples of an 11-letter vocabulary), tied or not.
ModelSection gpt_spec(bool tied) {
  ModelSection spec = small_models()[2].first;
  spec.tied_head = tied;
  return spec;
}
const SampleShape kText = small_models()[2].second;

BOOST_AUTO_TEST_CASE(a_gpt_cut_into_two_stages_is_the_whole_batch) {
  const SampleShape shape = kText;
  Gpt model(gpt_spec(false), shape, 8);
  // embed, h0, h1, head.
  BOOST_TEST_REQUIRE(model.block_count() == 4);
  for (int cut : {0, 1, 2}) {
    BOOST_TEST_CONTEXT("cut after block " << cut) check_two_stages(model, shape, cut);
  }
}

BOOST_AUTO_TEST_CASE(a_tied_head_stays_with_the_embedding) {
  const SampleShape shape = kText;
  Gpt model(gpt_spec(true), shape, 9);
  // In one stage, micro-batches accumulate into wte from the head and the embedding alike.
  Data d;
  const Batch b = random_batch(shape, kBatch, d);
  model.forward_backward(b, 1.0f / float(kBatch * 12));
  const std::vector<float> ref = model.grads_to_host();
  Stage all(model, 0, 3, 1);
  for (int64_t m = 0; m < kBatch / kMicro; ++m) {
    all.forward(0, d.tokens.data() + m * kMicro * 12, d.targets.data() + m * kMicro * 12, kMicro,
                1.0f / float(kBatch * 12));
    all.backward(0, nullptr, nullptr, m > 0);
  }
  expect_close(std::vector<float>(all.grads().begin(), all.grads().end()), ref, 1e-4);
  // Split, they would need their gradients summed across stages: refused, saying how to untie them.
  BOOST_CHECK_EXCEPTION(Stage(model, 2, 3, 1), JobError,
                        [](const JobError& e) { return e.where() == "[model] tied_head"; });
}
