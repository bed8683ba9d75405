// GPU benchmark of the CUDA kernels (not a test; scripts/device-check.sh runs it on the GPU machine).
// Times on random data, after a warm-up, as the median of 7 repetitions of `inner` back-to-back calls
// between device synchronisations. Rates count the arithmetic the implementation does (attention
// computes full T x T score matrices) or the bytes each kernel must move.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda/attention.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/conv.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/gelu.h"
#include "kernels/cuda/layernorm.h"
#include "kernels/cuda/linear.h"
#include "kernels/cuda/memory.h"
#include "kernels/cuda/optimizer.h"
#include "lib/core/error.h"

using dp::cuda::DeviceBuffer;

namespace {

std::mt19937_64 g_rng(12345);

DeviceBuffer<float> random_buffer(size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> host(n);
  for (float& v : host) v = d(g_rng);
  return DeviceBuffer<float>(host);
}

template <class F>
double median_ms(F&& f, int inner) {
  f();
  dp::cuda::synchronize();
  std::vector<double> times;
  for (int rep = 0; rep < 7; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < inner; ++i) f();
    dp::cuda::synchronize();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / inner);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void gemm(int64_t n) {
  auto a = random_buffer(size_t(n * n)), b = random_buffer(size_t(n * n)), c = random_buffer(size_t(n * n));
  const double flop = 2.0 * double(n) * double(n) * double(n);
  for (const bool tf32 : {false, true}) {
    dp::cuda::allow_tf32(tf32);
    const double ms = median_ms(
        [&] { dp::cuda::matmul(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n); }, 10);
    std::printf("gemm %lldx%lldx%lld %-5s  %9.3f ms  %7.1f TFLOP/s\n", (long long)n, (long long)n, (long long)n,
                tf32 ? "tf32" : "fp32", ms, flop / ms * 1e-9);
  }
  dp::cuda::allow_tf32(false);
}

void conv(const char* name, int64_t n, int64_t c, int64_t hw, int64_t o, int64_t stride, bool need_dx) {
  dp::cuda::ConvShape s;
  s.n = n;
  s.in_channels = c;
  s.height = s.width = hw;
  s.out_channels = o;
  s.kernel = 3;
  s.stride = stride;
  s.pad = 1;
  const int64_t pq = s.out_height() * s.out_width();
  auto x = random_buffer(size_t(n * c * hw * hw)), w = random_buffer(size_t(o * c * 9), -0.3f, 0.3f),
       b = random_buffer(size_t(o)), y = random_buffer(size_t(n * o * pq)), dy = random_buffer(size_t(n * o * pq)),
       dx = random_buffer(size_t(n * c * hw * hw)), dw = random_buffer(size_t(o * c * 9)), db = random_buffer(size_t(o));
  const double flop = 2.0 * double(n * o * pq) * double(c * 9);
  const double fwd = median_ms([&] { dp::cuda::conv2d_forward(s, x.data(), w.data(), b.data(), y.data()); }, 20);
  const double bwd = median_ms(
      [&] {
        dp::cuda::conv2d_backward(s, x.data(), w.data(), dy.data(), need_dx ? dx.data() : nullptr, dw.data(), db.data());
      },
      20);
  const double bwd_flop = flop * (need_dx ? 2 : 1);
  std::printf("conv %-26s fwd %8.3f ms (%6.2f TFLOP/s)  bwd%s %8.3f ms (%6.2f TFLOP/s)\n", name, fwd,
              flop / fwd * 1e-9, need_dx ? "" : " (no dx)", bwd, bwd_flop / bwd * 1e-9);
}

void attention(int64_t b, int64_t t, int64_t c, int64_t nh) {
  auto qkv = random_buffer(size_t(b * t * 3 * c)), att = random_buffer(size_t(b * nh * t * t)),
       out = random_buffer(size_t(b * t * c)), dout = random_buffer(size_t(b * t * c)),
       dqkv = random_buffer(size_t(b * t * 3 * c)),
       scratch = random_buffer(size_t(dp::cuda::attention_scratch_floats(t, nh)));
  const double gemm_flop = 2.0 * double(b * nh) * double(t * t) * double(c / nh);  // one T x T x HS product
  const double fwd = median_ms([&] { dp::cuda::attention_forward(qkv.data(), att.data(), out.data(), b, t, c, nh); }, 5);
  const double bwd = median_ms(
      [&] {
        dp::cuda::attention_backward(qkv.data(), att.data(), dout.data(), dqkv.data(), scratch.data(), b, t, c, nh);
      },
      5);
  std::printf("attention B=%lld T=%lld C=%lld NH=%lld  fwd %8.3f ms (%5.1f TFLOP/s)  bwd %8.3f ms (%5.1f TFLOP/s)\n",
              (long long)b, (long long)t, (long long)c, (long long)nh, fwd, 2 * gemm_flop / fwd * 1e-9, bwd,
              4 * gemm_flop / bwd * 1e-9);
}

void memory_bound() {
  const int64_t rows = 8 * 1024, c = 768, count = rows * 4 * c;
  auto x = random_buffer(size_t(count)), y = random_buffer(size_t(count)), dy = random_buffer(size_t(count));
  double ms = median_ms([&] { dp::cuda::gelu_forward(x.data(), y.data(), count); }, 20);
  std::printf("gelu forward %lld floats      %8.3f ms  %7.0f GB/s\n", (long long)count, ms, 8.0 * count / ms * 1e-6);
  ms = median_ms([&] { dp::cuda::gelu_backward(x.data(), dy.data(), y.data(), count); }, 20);
  std::printf("gelu backward %lld floats     %8.3f ms  %7.0f GB/s\n", (long long)count, ms, 12.0 * count / ms * 1e-6);
  auto gamma = random_buffer(size_t(c)), beta = random_buffer(size_t(c)), mean = random_buffer(size_t(rows)),
       rstd = random_buffer(size_t(rows)), dg = random_buffer(size_t(c)), dbeta = random_buffer(size_t(c));
  ms = median_ms([&] {
    dp::cuda::layernorm_forward(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data(), rows, c);
  }, 20);
  std::printf("layernorm forward %lldx%lld     %8.3f ms  %7.0f GB/s\n", (long long)rows, (long long)c, ms,
              8.0 * rows * c / ms * 1e-6);
  ms = median_ms([&] {
    dp::cuda::layernorm_backward(x.data(), gamma.data(), mean.data(), rstd.data(), dy.data(), y.data(), dg.data(),
                                 dbeta.data(), rows, c, false);
  }, 20);
  std::printf("layernorm backward %lldx%lld    %8.3f ms  %7.0f GB/s\n", (long long)rows, (long long)c, ms,
              16.0 * rows * c / ms * 1e-6);
  const int64_t params = 50'000'000;
  auto p = random_buffer(size_t(params)), grad = random_buffer(size_t(params)), m = random_buffer(size_t(params)),
       v = random_buffer(size_t(params), 0.0f, 1.0f);
  ms = median_ms([&] {
    dp::cuda::adamw_update(p.data(), grad.data(), m.data(), v.data(), params, 1e-4f, 0.9f, 0.999f, 1e-8f, 0.0f, 10);
  }, 10);
  std::printf("adamw %lld params            %8.3f ms  %7.0f GB/s\n", (long long)params, ms, 28.0 * params / ms * 1e-6);
}

}  // namespace

int main() {
  const dp::cuda::DeviceQuery q = dp::cuda::query_devices();
  if (q.count == 0) {
    std::printf("no usable GPU: %s; skipping\n", q.error.c_str());
    return 77;
  }
  try {
    std::printf("GPU: %s; %s; %s\n", q.first_name.c_str(), dp::cuda::library_versions().c_str(),
                dp::cuda::cudnn_version().c_str());
    gemm(4096);
    // The CNN's convolutions (default channels {16, 32}, Fashion-MNIST 28x28, global batch 128).
    conv("stem 1->16 28x28", 128, 1, 28, 16, 1, false);
    conv("block 16->16 28x28", 128, 16, 28, 16, 1, true);
    conv("down 16->32 28x28 s2", 128, 16, 28, 32, 2, true);
    conv("block 32->32 14x14", 128, 32, 14, 32, 1, true);
    conv("block 64->64 56x56 (larger)", 128, 64, 56, 64, 1, true);
    attention(8, 1024, 768, 12);
    memory_bound();
  } catch (const dp::Error& e) {
    std::fprintf(stderr, "%s\n", e.line().c_str());
    return 1;
  }
  return 0;
}
