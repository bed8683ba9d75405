// Pipeline stages (models/stage.h) on one GPU against the same stages on the CPU: a model cut into three
// stages in one process, every micro-batch's activations handed from stage to stage and its gradients
// back in device memory (the kernel table's copy, where a pipeline run's transfers would land), all
// micro-batches in flight at once (a slot each), gradients accumulated across them; with and without
// recomputation. Loss terms and every stage's gradients must match the CPU's. The MLP, the CNN and the
// untied GPT (a tied LM head cannot leave the embedding's stage).
#define BOOST_TEST_MODULE gpu_stage
#include "tests/gpu/gpu_testing.h"

#include <memory>
#include <string>

#include "kernels/cuda/context.h"
#include "kernels/kernel_table.h"
#include "models/model.h"
#include "models/stage.h"

using namespace dp;
using namespace dp::gpu_test;

namespace {

constexpr double kTol = 2e-5;  // fp32: different summation orders (cuBLAS, block reductions)
constexpr int kMicro = 3;      // micro-batches of the mini-batch

struct Case {
  const char* name;
  ModelSection spec;
  SampleShape shape;
  int64_t micro_batch;
  std::vector<int> lasts;  // the last block of each stage
};

std::vector<Case> cases() {
  ModelSection mlp;
  mlp.type = dp::ModelType::mlp;
  mlp.hidden = {64, 48, 32};
  ModelSection cnn;
  cnn.type = dp::ModelType::cnn;
  cnn.channels = {8, 16};
  cnn.blocks = 1;
  ModelSection gpt;
  gpt.type = dp::ModelType::gpt;
  gpt.layers = 3;
  gpt.width = 64;
  gpt.heads = 4;
  gpt.context = 48;
  gpt.tied_head = false;
  SampleShape vec{.features = 100, .classes = 10};
  SampleShape image{.features = 1 * 12 * 12, .classes = 7, .channels = 1, .height = 12, .width = 12};
  SampleShape text{.classes = 37, .context = 40};
  // MLP blocks fc1-fc4; CNN stem, unit, down, unit, head; GPT embed, h0-h2, head.
  return {{"mlp", mlp, vec, 11, {0, 2, 3}}, {"cnn", cnn, image, 4, {1, 3, 4}}, {"gpt", gpt, text, 3, {1, 3, 4}}};
}

struct Outcome {
  StepStats stats;
  std::vector<float> grads;  // every stage's, in the model's order
};

// The mini-batch of kMicro micro-batches through the stages of `model` on its kernel table: every forward
// (stage by stage, each micro-batch in its own slot), then every backward (last stage first).
Outcome run_stages(Model& model, const Case& c, const std::vector<float>& x, const std::vector<int32_t>& tokens,
                   const std::vector<int32_t>& targets, bool recompute) {
  const Kernels& k = model.kernels();
  const int64_t n = c.micro_batch;
  const bool text = c.shape.is_text();
  const int64_t per_target = text ? c.shape.context : 1;
  std::vector<std::unique_ptr<Stage>> stages;
  for (size_t s = 0, first = 0; s < c.lasts.size(); first = size_t(c.lasts[s]) + 1, ++s)
    stages.push_back(std::make_unique<Stage>(model, int(first), c.lasts[s], kMicro,
                                             std::vector<bool>(size_t(c.lasts[s]) - first + 1, recompute)));
  std::vector<Buffer<int32_t>> tok, tgt;
  Outcome out;
  for (int m = 0; m < kMicro; ++m) {
    tok.emplace_back(k, size_t(text ? n * c.shape.context : 0));
    tgt.emplace_back(k, size_t(n * per_target));
    if (text) tok.back().upload(std::span(tokens.data() + m * n * c.shape.context, size_t(n * c.shape.context)));
    else stages[0]->upload_input(m, std::span(x.data() + m * n * c.shape.features, size_t(n * c.shape.features)));
    tgt.back().upload(std::span(targets.data() + m * n * per_target, size_t(n * per_target)));
    const float scale = 1.0f / float(kMicro * n * per_target);
    for (size_t s = 0; s < stages.size(); ++s) {
      if (s > 0)  // the previous stage's output, device to device
        k.copy(stages[s]->input(m, n), stages[s - 1]->output(m), size_t(n * stages[s]->in_floats()) * sizeof(float));
      const StepStats st = stages[s]->forward(m, tok[size_t(m)].data(), tgt[size_t(m)].data(), n, scale);
      out.stats.loss_sum += st.loss_sum, out.stats.correct += st.correct, out.stats.count += st.count;
    }
  }
  std::vector<Buffer<float>> dx;
  for (const auto& s : stages) dx.emplace_back(k, size_t(n * s->in_floats()));
  for (int m = 0; m < kMicro; ++m)
    for (size_t s = stages.size(); s-- > 0;)
      stages[s]->backward(m, s + 1 < stages.size() ? dx[s + 1].data() : nullptr, s > 0 ? dx[s].data() : nullptr,
                          m > 0);
  for (const auto& s : stages) {
    const auto g = s->grads_to_host();
    out.grads.insert(out.grads.end(), g.begin(), g.end());
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(stages_on_the_gpu_match_the_cpu) {
  cuda::set_gemm_math(cuda::GemmMath::fp32);
  for (const Case& c : cases())
    for (const bool recompute : {false, true})
      BOOST_TEST_CONTEXT(c.name << (recompute ? ", recomputing" : "")) {
        auto g = rng(std::hash<std::string>{}(c.name));
        const int64_t samples = kMicro * c.micro_batch;
        const bool text = c.shape.is_text();
        const std::vector<float> x = text ? std::vector<float>{} : uniform(g, size_t(samples * c.shape.features));
        const std::vector<int32_t> tokens =
            text ? integers(g, size_t(samples * c.shape.context), int32_t(c.shape.classes)) : std::vector<int32_t>{};
        const std::vector<int32_t> targets =
            integers(g, size_t(samples * (text ? c.shape.context : 1)), int32_t(c.shape.classes));
        auto cpu_model = make_model(c.spec, c.shape, 1234, cpu_kernels());
        auto gpu_model = make_model(c.spec, c.shape, 1234, cuda_kernels());
        const Outcome want = run_stages(*cpu_model, c, x, tokens, targets, recompute);
        const Outcome got = run_stages(*gpu_model, c, x, tokens, targets, recompute);
        BOOST_TEST(got.stats.count == want.stats.count);
        BOOST_TEST(got.stats.loss_sum == want.stats.loss_sum, boost::test_tools::tolerance(kTol));
        expect_close("stage gradients", got.grads, want.grads, kTol);
      }
}
