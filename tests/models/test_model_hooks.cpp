// The hooks data parallelism relies on, for every model type, whole layers and (where the model slices
// wide layers) slices: gradients_ready reports decreasing offsets down to 0, the forward pass never reads
// a parameter before parameters_needed has announced it (checked by starting from NaN parameters and
// filling in the true values only as they are announced), backward never reads a parameter after its
// gradient was announced (sharded MRA may update it at once: checked by poisoning it then), and every
// announced offset is a boundary of hook_ranges(), over which buckets are planned. The loss and
// gradients must come out exactly as without hooks.
#define BOOST_TEST_MODULE model_hooks
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "tests/models/model_testing.h"

using namespace dp;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Offsets where hook ranges begin or end; they must tile [0, total).
std::set<int64_t> boundaries(const std::vector<ParamRange>& ranges, int64_t total) {
  std::set<int64_t> cuts{0};
  int64_t expected = 0;
  for (const ParamRange& r : ranges) {
    BOOST_TEST(r.offset == expected);
    BOOST_TEST(r.count > 0);
    expected = r.end();
    cuts.insert(r.end());
  }
  BOOST_TEST(expected == total);
  return cuts;
}

}  // namespace

BOOST_AUTO_TEST_CASE(hooks_announce_parameters_in_order_and_are_honoured) {
  for (const auto& [spec, shape] : small_models()) {
    for (const int64_t slice : {int64_t(0), int64_t(50)}) {
      BOOST_TEST_CONTEXT(spec.type << ", hook slice " << slice) {
        auto model = make_model(spec, shape, 9);
        model->set_hook_slice(slice);
        Data d;
        const Batch b = random_batch(shape, 3, d);
        const StepStats want = model->forward_backward(b, 1.0f);
        const std::vector<float> grads = model->grads_to_host();

        const std::vector<float> truth = model->params_to_host();
        const int64_t total = int64_t(truth.size());
        const std::set<int64_t> cuts = boundaries(model->hook_ranges(), total);
        model->params_from_host(std::vector<float>(truth.size(), kNaN));
        int64_t announced = 0, calls = 0;
        bool increasing = true, on_cuts = true;
        model->on_parameters_needed([&](int64_t end) {
          ++calls;
          increasing = increasing && end >= announced && end <= total;
          on_cuts = on_cuts && cuts.count(end) == 1;
          std::copy(truth.begin() + announced, truth.begin() + std::max(announced, end),
                    model->params().begin() + announced);
          announced = std::max(announced, end);
        });
        std::vector<int64_t> ready;
        model->on_gradients_ready([&](int64_t offset) {
          on_cuts = on_cuts && cuts.count(offset) == 1;
          const int64_t from = ready.empty() ? total : ready.back();
          if (offset < from) std::fill(model->params().begin() + offset, model->params().begin() + from, kNaN);
          ready.push_back(offset);
        });
        const StepStats got = model->forward_backward(b, 1.0f);
        BOOST_TEST(increasing);
        BOOST_TEST(on_cuts);
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
}

// Slices change the order of summation, not the arithmetic: the same loss and gradients up to rounding,
// and the MLP announces every slice.
BOOST_AUTO_TEST_CASE(sliced_layers_compute_the_same_step) {
  for (const auto& [spec, shape] : small_models()) {
    BOOST_TEST_CONTEXT(spec.type) {
      auto model = make_model(spec, shape, 9);
      Data d;
      const Batch b = random_batch(shape, 3, d);
      const StepStats whole = model->forward_backward(b, 1.0f);
      const std::vector<float> whole_grads = model->grads_to_host();
      const size_t layer_ranges = model->hook_ranges().size();
      model->set_hook_slice(50);
      int64_t announced = 0;
      model->on_gradients_ready([&](int64_t) { ++announced; });
      const StepStats sliced = model->forward_backward(b, 1.0f);
      BOOST_TEST(sliced.loss_sum == whole.loss_sum, boost::test_tools::tolerance(1e-5));
      const std::vector<float> g = model->grads_to_host();
      for (size_t i = 0; i < g.size(); ++i)
        BOOST_TEST(std::abs(g[i] - whole_grads[i]) <= 1e-5f * (1.0f + std::abs(whole_grads[i])));
      if (spec.type == dp::ModelType::mlp) {
        BOOST_TEST(model->hook_ranges().size() == 14u);  // 20->16: 8 slices, 16->12: 4, 12->5: 2
        BOOST_TEST(model->hook_ranges().size() > layer_ranges);
        BOOST_TEST(announced == int64_t(model->hook_ranges().size()));
      }
    }
  }
}
