// Whole models on the CUDA kernel table against the same models on the CPU table: identical initial
// parameters, then loss, accuracy counts and every gradient on random batches (whole, and in micro-batches
// recomputing every block), an AdamW step, evaluation, and bf16 GEMMs within a looser tolerance. The CPU
// path is itself checked against finite differences (tests/models/).
#define BOOST_TEST_MODULE gpu_models
#include "tests/gpu/gpu_testing.h"

#include <functional>
#include <string>

#include "kernels/cuda/context.h"
#include "kernels/kernel_table.h"
#include "models/model.h"

using namespace dp;
using namespace dp::gpu_test;

namespace {

constexpr double kTol = 2e-5;       // fp32: different summation orders (cuBLAS, block reductions)
constexpr double kBf16Tol = 3e-2;   // bf16 operands: 8 significant bits

struct Case {
  const char* name;
  ModelSection spec;
  SampleShape shape;
  int64_t batch;
};

std::vector<Case> cases() {
  ModelSection mlp;
  mlp.type = dp::ModelType::mlp;
  mlp.hidden = {64, 32};
  ModelSection cnn;
  cnn.type = dp::ModelType::cnn;
  cnn.channels = {8, 16};
  cnn.blocks = 1;
  ModelSection gpt;
  gpt.type = dp::ModelType::gpt;
  gpt.layers = 2;
  gpt.width = 64;
  gpt.heads = 4;
  gpt.context = 48;
  gpt.tied_head = true;
  ModelSection gpt_untied = gpt;
  gpt_untied.tied_head = false;

  SampleShape vec{.features = 100, .classes = 10};
  SampleShape image{.features = 1 * 12 * 12, .classes = 7, .channels = 1, .height = 12, .width = 12};
  SampleShape text{.classes = 37, .context = 40};
  return {{"mlp", mlp, vec, 33}, {"cnn", cnn, image, 9}, {"gpt", gpt, text, 5}, {"gpt untied", gpt_untied, text, 3}};
}

// A batch with random inputs: features for vector and image data, token ids for text.
struct RandomBatch {
  std::vector<float> x;
  std::vector<int32_t> tokens, targets;
  Batch batch;
  RandomBatch(const SampleShape& shape, int64_t n, uint64_t salt) {
    auto g = rng(salt);
    if (shape.is_text()) {
      tokens = integers(g, size_t(n * shape.context), int32_t(shape.classes));
      targets = integers(g, size_t(n * shape.context), int32_t(shape.classes));
      batch = {n, nullptr, tokens.data(), targets.data()};
    } else {
      x = uniform(g, size_t(n * shape.features));
      targets = integers(g, size_t(n), int32_t(shape.classes));
      batch = {n, x.data(), nullptr, targets.data()};
    }
  }
};

void compare(const Case& c, double tol) {
  auto cpu_model = make_model(c.spec, c.shape, 1234, cpu_kernels());
  auto gpu_model = make_model(c.spec, c.shape, 1234, cuda_kernels());
  BOOST_TEST(cpu_model->describe() == gpu_model->describe());
  BOOST_TEST(cpu_model->fingerprint() == gpu_model->fingerprint());
  const auto p0 = cpu_model->params_to_host();
  BOOST_TEST(gpu_model->params_to_host() == p0, "initial parameters differ");

  const RandomBatch rb(c.shape, c.batch, std::hash<std::string>{}(c.name));
  const float scale = 1.0f / float(c.batch * cpu_model->targets_per_sample());
  const StepStats want = cpu_model->forward_backward(rb.batch, scale);
  const StepStats got = gpu_model->forward_backward(rb.batch, scale);
  BOOST_TEST(got.count == want.count);
  BOOST_TEST(got.loss_sum == want.loss_sum, boost::test_tools::tolerance(tol));
  BOOST_TEST(std::abs(got.correct - want.correct) <= std::max<int64_t>(1, want.count / 50));
  expect_close("gradients", gpu_model->grads_to_host(), cpu_model->grads_to_host(), tol);

  // Layer by layer too, so a failure names the layer.
  const auto g_cpu = cpu_model->grads_to_host(), g_gpu = gpu_model->grads_to_host();
  for (const LayerInfo& l : cpu_model->layers()) {
    if (l.param_count == 0) continue;
    const auto b = size_t(l.param_offset), e = b + size_t(l.param_count);
    expect_close(l.name, {g_gpu.begin() + b, g_gpu.begin() + e}, {g_cpu.begin() + b, g_cpu.begin() + e},
                 tol * 10);
  }

  // In micro-batches of 3 (the batch's last one shorter), every block recomputed: the same gradients,
  // accumulated on the device (models/model.h).
  gpu_model->set_recompute(TrainRecompute::all);
  const StepStats parts = gpu_model->forward_backward(rb.batch, scale, 3);
  gpu_model->set_recompute(TrainRecompute::none);
  BOOST_TEST(parts.loss_sum == want.loss_sum, boost::test_tools::tolerance(tol));
  expect_close("gradients in micro-batches, recomputed", gpu_model->grads_to_host(), cpu_model->grads_to_host(), tol);

  // Evaluation (forward only) on a second batch.
  const RandomBatch eb(c.shape, c.batch + 2, 99);
  const StepStats ew = cpu_model->evaluate(eb.batch), eg = gpu_model->evaluate(eb.batch);
  BOOST_TEST(eg.loss_sum == ew.loss_sum, boost::test_tools::tolerance(tol));

  // An empty batch zeroes the gradients.
  gpu_model->forward_backward({0, nullptr, nullptr, nullptr}, 1.0f);
  for (float v : gpu_model->grads_to_host()) BOOST_REQUIRE(v == 0.0f);
}

}  // namespace

BOOST_AUTO_TEST_CASE(models_match_cpu_in_fp32) {
  cuda::set_gemm_math(cuda::GemmMath::fp32);
  for (const Case& c : cases()) BOOST_TEST_CONTEXT(c.name) { compare(c, kTol); }
}

BOOST_AUTO_TEST_CASE(models_match_cpu_with_bf16_gemms) {
  cuda::set_gemm_math(cuda::GemmMath::bf16);
  for (const Case& c : cases()) BOOST_TEST_CONTEXT(c.name) { compare(c, kBf16Tol); }
  cuda::set_gemm_math(cuda::GemmMath::fp32);
}

BOOST_AUTO_TEST_CASE(training_steps_track_the_cpu) {
  // Ten SGD steps on the same batches: parameters stay within a small relative distance.
  cuda::set_gemm_math(cuda::GemmMath::fp32);
  for (const Case& c : cases()) {
    BOOST_TEST_CONTEXT(c.name) {
      auto a = make_model(c.spec, c.shape, 7, cpu_kernels());
      auto b = make_model(c.spec, c.shape, 7, cuda_kernels());
      Buffer<float> va(cpu_kernels(), a->params().size()), vb(cuda_kernels(), b->params().size());
      va.zero();
      vb.zero();
      for (int step = 0; step < 10; ++step) {
        const RandomBatch rb(c.shape, c.batch, 1000 + uint64_t(step));
        const float scale = 1.0f / float(c.batch * a->targets_per_sample());
        a->forward_backward(rb.batch, scale);
        b->forward_backward(rb.batch, scale);
        const int64_t n = int64_t(a->params().size());
        cpu_kernels().sgd_momentum_update(a->params().data(), a->grads().data(), va.data(), n, 0.05f, 0.9f, 0.0f);
        cuda_kernels().sgd_momentum_update(b->params().data(), b->grads().data(), vb.data(), n, 0.05f, 0.9f, 0.0f);
      }
      expect_close("parameters after 10 steps", b->params_to_host(), a->params_to_host(), 1e-4);
    }
  }
}
