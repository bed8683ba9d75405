// kernels/cuda/activation.cu against kernels/cpu/activation.cpp: ReLU and the residual sum must match exactly.
#define BOOST_TEST_MODULE gpu_activation
#include "tests/gpu/gpu_testing.h"

#include "kernels/cpu/ops.h"
#include "kernels/cuda/activation.h"

using namespace dp;
using namespace dp::gpu_test;

BOOST_AUTO_TEST_CASE(relu_matches_cpu_exactly) {
  for (const int64_t count : {int64_t(1), int64_t(1000), int64_t(3'000'001)}) {
    BOOST_TEST_CONTEXT("count=" << count) {
      auto g = rng(uint64_t(count));
      auto x = uniform(g, size_t(count));
      x[0] = 0.0f;  // the boundary: relu(0) = 0, and its gradient is 0
      const auto dy = uniform(g, size_t(count));
      std::vector<float> y(x.size()), dx(x.size());
      cpu::relu_forward(x.data(), y.data(), count);
      cpu::relu_backward(y.data(), dy.data(), dx.data(), count);

      DeviceBuffer<float> gx(x), gdy(dy);
      auto gy = poisoned(y.size()), gdx = poisoned(dx.size());
      cuda::relu_forward(gx.data(), gy.data(), count);
      cuda::relu_backward(gy.data(), gdy.data(), gdx.data(), count);
      expect_close("y", gy.download(), y, 0.0);
      expect_close("dx", gdx.download(), dx, 0.0);

      // In place: y over x, dx over dy.
      cuda::relu_forward(gx.data(), gx.data(), count);
      cuda::relu_backward(gx.data(), gdy.data(), gdy.data(), count);
      expect_close("y in place", gx.download(), y, 0.0);
      expect_close("dx in place", gdy.download(), dx, 0.0);
    }
  }
}

BOOST_AUTO_TEST_CASE(add_matches_cpu_exactly) {
  for (const int64_t count : {int64_t(1), int64_t(4097), int64_t(2'000'003)}) {
    BOOST_TEST_CONTEXT("count=" << count) {
      auto g = rng(uint64_t(count) + 7);
      const auto a = uniform(g, size_t(count)), b = uniform(g, size_t(count));
      std::vector<float> want(a.size());
      cpu::add(a.data(), b.data(), want.data(), count);
      DeviceBuffer<float> ga(a), gb(b);
      auto out = poisoned(a.size());
      cuda::add(ga.data(), gb.data(), out.data(), count);
      expect_close("a + b", out.download(), want, 0.0);
      cuda::add(ga.data(), gb.data(), ga.data(), count);  // in place over a
      expect_close("a += b", ga.download(), want, 0.0);
    }
  }
}
