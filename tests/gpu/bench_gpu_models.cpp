// GPU training-step benchmark (not a test; scripts/device-check.sh runs it on the GPU machine): whole
// models on the CUDA kernel table, forward + backward + AdamW per step, batches uploaded from the host
// every step as in training.
//   gpt2-small: 12 layers x 768, 12 heads, context 1024, vocabulary 50257, tied head (124M parameters);
//               tokens/s and model FLOPs utilisation (MFU) = 3 x the layer list's forward FLOPs per token
//               x tokens/s / the GPU's peak for the arithmetic used (fp32 CUDA cores, or bf16 tensor
//               cores), peaks for the H200 SXM from NVIDIA's data sheet (dense);
//   cnn:        configs/cnn.toml's network on 28x28 images: samples/s.
// Reports the median and best of the timed steps after warm-up steps.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda/context.h"
#include "kernels/cuda/device.h"
#include "kernels/kernel_table.h"
#include "lib/core/error.h"
#include "models/model.h"

using namespace dp;

namespace {

constexpr double kPeakFp32 = 67e12;    // H200 SXM, FP32 (CUDA cores)
constexpr double kPeakBf16 = 989e12;   // H200 SXM, BF16 tensor cores, dense

struct Timing {
  double median_s, best_s;
};

Timing time_steps(Model& model, const Batch& batch, int warmup, int steps) {
  const Kernels& k = model.kernels();
  Buffer<float> m(k, model.params().size()), v(k, model.params().size());
  m.zero();
  v.zero();
  const float scale = 1.0f / float(batch.n * model.targets_per_sample());
  std::vector<double> secs;
  for (int i = 0; i < warmup + steps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    model.forward_backward(batch, scale);
    k.adamw_update(model.params().data(), model.grads().data(), m.data(), v.data(),
                   int64_t(model.params().size()), 3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, i + 1);
    k.synchronize();
    if (i >= warmup) secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(secs.begin(), secs.end());
  return {secs[secs.size() / 2], secs.front()};
}

void gpt2_small(int64_t batch, cuda::GemmMath math) {
  cuda::set_gemm_math(math);
  ModelSection spec;
  spec.type = dp::ModelType::gpt;
  spec.layers = 12;
  spec.width = 768;
  spec.heads = 12;
  spec.context = 1024;
  spec.tied_head = true;
  const SampleShape shape{.classes = 50257, .context = 1024};
  auto model = make_model(spec, shape, 1, cuda_kernels());
  std::mt19937 g(1);
  std::uniform_int_distribution<int32_t> token(0, int32_t(shape.classes) - 1);
  std::vector<int32_t> tokens(size_t(batch * shape.context)), targets(tokens.size());
  for (auto& t : tokens) t = token(g);
  for (auto& t : targets) t = token(g);
  const Batch b{batch, nullptr, tokens.data(), targets.data()};
  const Timing t = time_steps(*model, b, 3, 10);
  const double tokens_per_step = double(batch * shape.context);
  const double flops_per_token = 3.0 * model->flops_per_sample() / double(shape.context);
  const bool bf16 = math == cuda::GemmMath::bf16;
  const double peak = bf16 ? kPeakBf16 : kPeakFp32;
  const double tps = tokens_per_step / t.median_s;
  std::printf("gpt2-small %-4s B=%lld T=1024  %s  step %.1f ms (best %.1f)  %.0f tokens/s  "
              "%.1f TFLOP/s  MFU %.1f%% of %s peak %.0f TFLOP/s\n",
              bf16 ? "bf16" : "fp32", (long long)batch, model->describe().c_str(), t.median_s * 1e3,
              t.best_s * 1e3, tps, tps * flops_per_token * 1e-12, 100.0 * tps * flops_per_token / peak,
              bf16 ? "bf16 tensor-core" : "fp32", peak * 1e-12);
  std::fflush(stdout);
}

void cnn(int64_t batch) {
  cuda::set_gemm_math(cuda::GemmMath::fp32);
  ModelSection spec;  // configs/cnn.toml
  spec.type = dp::ModelType::cnn;
  spec.channels = {8, 16, 32};
  spec.blocks = 1;
  const SampleShape shape{.features = 784, .classes = 10, .channels = 1, .height = 28, .width = 28};
  auto model = make_model(spec, shape, 1, cuda_kernels());
  std::mt19937 g(2);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  std::vector<float> x(size_t(batch * shape.features));
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  for (auto& v : x) v = pixel(g);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = int32_t(i % 10);
  const Batch b{batch, x.data(), nullptr, labels.data()};
  const Timing t = time_steps(*model, b, 5, 20);
  std::printf("cnn fp32 B=%lld  %s  step %.2f ms (best %.2f)  %.0f samples/s\n", (long long)batch,
              model->describe().c_str(), t.median_s * 1e3, t.best_s * 1e3, double(batch) / t.median_s);
  std::fflush(stdout);
}

}  // namespace

int main() {
  const cuda::DeviceQuery q = cuda::query_devices();
  if (q.count == 0) {
    std::printf("no usable GPU (%s): nothing to benchmark\n", q.error.c_str());
    return 77;
  }
  std::printf("GPU: %s; %s\n", q.first_name.c_str(), cuda::library_versions().c_str());
  try {
    for (int64_t b : {128, 1024}) cnn(b);
    gpt2_small(8, cuda::GemmMath::fp32);
    gpt2_small(8, cuda::GemmMath::bf16);
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_gpu_models: %s\n", e.what());
    return 1;
  }
  return 0;
}
