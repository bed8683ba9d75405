// kernels/cuda/optimizer.cu against kernels/cpu/optimizer.cpp over several steps (relative 1e-6: the
// same float arithmetic, up to fused multiply-adds).
#define BOOST_TEST_MODULE gpu_optimizer
#include "tests/gpu/gpu_testing.h"

#include "kernels/cpu/ops.h"
#include "kernels/cuda/optimizer.h"

using namespace dp;
using namespace dp::gpu_test;

namespace {
constexpr int64_t kCount = 100'003;
constexpr double kTol = 1e-6;
}  // namespace

BOOST_AUTO_TEST_CASE(sgd_momentum_matches_cpu) {
  auto g = rng(11);
  auto p = uniform(g, kCount), v = std::vector<float>(kCount, 0.0f);
  DeviceBuffer<float> gp(p), gv(v), gg(kCount);
  for (int step = 0; step < 5; ++step) {
    const auto grad = uniform(g, kCount);
    gg.upload(grad);
    cpu::sgd_momentum_update(p.data(), grad.data(), v.data(), kCount, 0.05f, 0.9f, 1e-4f);
    cuda::sgd_momentum_update(gp.data(), gg.data(), gv.data(), kCount, 0.05f, 0.9f, 1e-4f);
  }
  expect_close("p", gp.download(), p, kTol);
  expect_close("v", gv.download(), v, kTol);
}

BOOST_AUTO_TEST_CASE(adamw_matches_cpu) {
  auto g = rng(12);
  auto p = uniform(g, kCount), m = std::vector<float>(kCount, 0.0f), v = m;
  DeviceBuffer<float> gp(p), gm(m), gv(v), gg(kCount);
  for (int64_t t = 1; t <= 5; ++t) {
    const auto grad = uniform(g, kCount);
    gg.upload(grad);
    cpu::adamw_update(p.data(), grad.data(), m.data(), v.data(), kCount, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, t);
    cuda::adamw_update(gp.data(), gg.data(), gm.data(), gv.data(), kCount, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, t);
  }
  expect_close("p", gp.download(), p, kTol);
  expect_close("m", gm.download(), m, kTol);
  expect_close("v", gv.download(), v, kTol);
}
