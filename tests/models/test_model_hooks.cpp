// The hooks data parallelism relies on, for every model type: gradients_ready reports decreasing offsets
// down to 0, and the forward pass never reads a parameter before parameters_needed has announced it
// (checked by starting from NaN parameters and filling in the true values only as they are announced:
// the loss must come out exactly as with all parameters present).
#define BOOST_TEST_MODULE model_hooks
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>

#include "tests/models/model_testing.h"

using namespace dp;

BOOST_AUTO_TEST_CASE(forward_reads_only_announced_parameters) {
  for (const auto& [spec, shape] : small_models()) {
    BOOST_TEST_CONTEXT(spec.type) {
      auto model = make_model(spec, shape, 9);
      Data d;
      const Batch b = random_batch(shape, 3, d);
      const StepStats want = model->forward_backward(b, 1.0f);
      const std::vector<float> grads = model->grads_to_host();

      const std::vector<float> truth = model->params_to_host();
      const int64_t total = int64_t(truth.size());
      std::vector<float> poisoned(truth.size(), std::numeric_limits<float>::quiet_NaN());
      model->params_from_host(poisoned);
      int64_t announced = 0, calls = 0;
      bool increasing = true;
      model->on_parameters_needed([&](int64_t end) {
        ++calls;
        increasing = increasing && end >= announced && end <= total;
        std::copy(truth.begin() + announced, truth.begin() + std::max(announced, end),
                  model->params().begin() + announced);
        announced = std::max(announced, end);
      });
      std::vector<int64_t> ready;
      model->on_gradients_ready([&](int64_t offset) { ready.push_back(offset); });
      const StepStats got = model->forward_backward(b, 1.0f);
      BOOST_TEST(increasing);
      BOOST_TEST(announced == total);
      BOOST_TEST(calls > 2);  // layer by layer, not all at once
      BOOST_TEST(got.loss_sum == want.loss_sum);
      BOOST_TEST(model->grads_to_host() == grads);
      BOOST_TEST(!ready.empty());
      for (size_t i = 1; i < ready.size(); ++i) BOOST_TEST(ready[i] <= ready[i - 1]);
      if (!ready.empty()) BOOST_TEST(ready.back() == 0);
    }
  }
}
