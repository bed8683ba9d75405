// Models run through whichever kernel table they are given. A "staged" table (the CPU kernels, but
// declaring its memory not to be the host's, so every batch is copied in as it is for a GPU) must give
// bit-identical losses and gradients: the staging path works and nothing bypasses the table.
#define BOOST_TEST_MODULE kernel_tables
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <vector>

#include "kernels/kernel_table.h"
#include "models/model.h"
#include "tests/models/model_testing.h"

using namespace dp;

namespace {

std::atomic<int64_t> g_uploads{0};

void counting_upload(void* dst, const void* src, size_t bytes) {
  ++g_uploads;
  cpu_kernels().upload(dst, src, bytes);
}

const Kernels& staged_kernels() {
  static const Kernels k = [] {
    Kernels t = cpu_kernels();
    t.name = "staged";
    t.host_memory = false;
    t.upload = counting_upload;
    return t;
  }();
  return k;
}

void check_same(const ModelSection& spec, const SampleShape& shape, int64_t n) {
  auto host = make_model(spec, shape, 5, cpu_kernels());
  auto staged = make_model(spec, shape, 5, staged_kernels());
  BOOST_TEST(&staged->kernels() == &staged_kernels());
  Data d;
  const Batch b = random_batch(shape, n, d);
  const int64_t before = g_uploads;
  const StepStats a = host->forward_backward(b, 0.25f);
  const StepStats s = staged->forward_backward(b, 0.25f);
  BOOST_TEST(g_uploads > before, "the staged model never copied its batch in");
  BOOST_TEST(a.loss_sum == s.loss_sum);
  BOOST_TEST(a.correct == s.correct);
  BOOST_TEST(host->grads_to_host() == staged->grads_to_host());
  BOOST_TEST(host->evaluate(b).loss_sum == staged->evaluate(b).loss_sum);
}

}  // namespace

BOOST_AUTO_TEST_CASE(staged_models_match_host_models_bit_for_bit) {
  for (const auto& [spec, shape] : small_models()) {
    BOOST_TEST_CONTEXT(spec.type) { check_same(spec, shape, 3); }
  }
}

BOOST_AUTO_TEST_CASE(parameters_round_trip_through_the_host) {
  ModelSection mlp;
  mlp.type = dp::ModelType::mlp;
  mlp.hidden = {8};
  auto m = make_model(mlp, {.features = 4, .classes = 2}, 1, staged_kernels());
  std::vector<float> p = m->params_to_host();
  for (float& v : p) v += 1.0f;
  m->params_from_host(p);
  BOOST_TEST(m->params_to_host() == p);
}
