// kernels/cuda/cross_entropy.cu against kernels/cpu/cross_entropy.cpp: loss sum (relative 1e-6), the
// number of correct arg-maxes (exact), dlogits (1e-5); labels out of range.
#define BOOST_TEST_MODULE gpu_cross_entropy
#include "tests/gpu/gpu_testing.h"

#include "kernels/cpu/ops.h"
#include "kernels/cuda/cross_entropy.h"

using namespace dp;
using namespace dp::gpu_test;

BOOST_AUTO_TEST_CASE(loss_correct_and_gradient_match_cpu) {
  struct Shape {
    int64_t n, classes;
  };
  for (const Shape s : {Shape{1, 1}, Shape{257, 10}, Shape{64, 1000}, Shape{3000, 37}}) {
    BOOST_TEST_CONTEXT("n=" << s.n << " classes=" << s.classes) {
      auto g = rng(uint64_t(s.n * 7919 + s.classes));
      const auto logits = uniform(g, size_t(s.n * s.classes), -4.0f, 4.0f);
      const auto labels = integers(g, size_t(s.n), int32_t(s.classes));
      const float scale = 1.0f / float(s.n);
      std::vector<float> dlogits(logits.size());
      const cpu::LossSums want =
          cpu::softmax_cross_entropy(logits.data(), labels.data(), dlogits.data(), s.n, s.classes, scale);

      DeviceBuffer<float> gl(logits);
      DeviceBuffer<int32_t> glab(labels);
      auto gd = poisoned(logits.size());
      const cuda::LossSums got =
          cuda::softmax_cross_entropy(gl.data(), glab.data(), gd.data(), s.n, s.classes, scale);
      BOOST_TEST(got.loss == want.loss, boost::test_tools::tolerance(1e-6));
      BOOST_TEST(got.correct == want.correct);
      expect_close("dlogits", gd.download(), dlogits, 1e-5);

      // No gradient requested.
      const cuda::LossSums eval = cuda::softmax_cross_entropy(gl.data(), glab.data(), nullptr, s.n, s.classes, 1);
      BOOST_TEST(eval.loss == want.loss, boost::test_tools::tolerance(1e-6));
      BOOST_TEST(eval.correct == want.correct);
      // dlogits over the logits.
      cuda::softmax_cross_entropy(gl.data(), glab.data(), gl.data(), s.n, s.classes, scale);
      expect_close("dlogits in place", gl.download(), dlogits, 1e-5);
    }
  }
}

BOOST_AUTO_TEST_CASE(ties_pick_the_first_class_and_empty_batches_are_zero) {
  // Every logit equal: arg-max is class 0, so only labels 0 count as correct; loss = n log C.
  const int64_t n = 4, classes = 5;
  const std::vector<float> logits(size_t(n * classes), 0.5f);
  const std::vector<int32_t> labels = {0, 1, 0, 4};
  DeviceBuffer<float> gl(logits);
  DeviceBuffer<int32_t> glab(labels);
  const cuda::LossSums got = cuda::softmax_cross_entropy(gl.data(), glab.data(), nullptr, n, classes, 1.0f);
  BOOST_TEST(got.correct == 2);
  BOOST_TEST(got.loss == double(n) * std::log(double(classes)), boost::test_tools::tolerance(1e-6));
  const cuda::LossSums none = cuda::softmax_cross_entropy(gl.data(), glab.data(), nullptr, 0, classes, 1.0f);
  BOOST_TEST(none.loss == 0.0);
  BOOST_TEST(none.correct == 0);
}

BOOST_AUTO_TEST_CASE(labels_out_of_range_give_nan_loss_and_zero_gradient_rows) {
  const int64_t n = 5, classes = 7;
  const float scale = 0.25f;
  auto g = rng(5);
  const auto logits = uniform(g, size_t(n * classes), -4.0f, 4.0f);
  const std::vector<int32_t> labels = {3, -1, 7, 0, 1000};
  // The CPU kernel has no defined result for such labels: the valid rows alone are the reference.
  std::vector<float> want(logits.size(), 0.0f);
  int64_t correct = 0;
  for (const int64_t i : {int64_t(0), int64_t(3)})
    correct += cpu::softmax_cross_entropy(logits.data() + i * classes, labels.data() + i,
                                          want.data() + i * classes, 1, classes, scale)
                   .correct;
  DeviceBuffer<float> gl(logits);
  DeviceBuffer<int32_t> glab(labels);
  auto gd = poisoned(logits.size());
  const cuda::LossSums got = cuda::softmax_cross_entropy(gl.data(), glab.data(), gd.data(), n, classes, scale);
  BOOST_TEST(std::isnan(got.loss));
  BOOST_TEST(got.correct == correct);
  expect_close("dlogits", gd.download(), want, 1e-5);
}
