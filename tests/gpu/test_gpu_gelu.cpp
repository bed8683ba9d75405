// kernels/cuda/gelu.cu against kernels/cpu/gelu.cpp (relative 1e-5: the CPU's vectorised tanh is within
// about 1e-7 of tanhf), also in place.
#define BOOST_TEST_MODULE gpu_gelu
#include "tests/gpu/gpu_testing.h"

#include "kernels/cpu/gelu.h"
#include "kernels/cuda/gelu.h"

using namespace dp;
using namespace dp::gpu_test;

BOOST_AUTO_TEST_CASE(gelu_matches_cpu) {
  for (const int64_t count : {int64_t(1), int64_t(1000), int64_t(1'000'003)}) {
    BOOST_TEST_CONTEXT("count=" << count) {
      auto g = rng(uint64_t(count));
      const auto x = uniform(g, size_t(count), -6.0f, 6.0f), dy = uniform(g, size_t(count));
      std::vector<float> y(x.size()), dx(x.size());
      cpu::gelu_forward(x.data(), y.data(), count);
      cpu::gelu_backward(x.data(), dy.data(), dx.data(), count);
      DeviceBuffer<float> gx(x), gdy(dy);
      auto gy = poisoned(y.size()), gdx = poisoned(dx.size());
      cuda::gelu_forward(gx.data(), gy.data(), count);
      cuda::gelu_backward(gx.data(), gdy.data(), gdx.data(), count);
      expect_close("y", gy.download(), y, 1e-5);
      expect_close("dx", gdx.download(), dx, 1e-5);
      cuda::gelu_backward(gx.data(), gdy.data(), gdy.data(), count);  // dx over dy
      expect_close("dx in place", gdy.download(), dx, 1e-5);
      cuda::gelu_forward(gx.data(), gx.data(), count);  // y over x
      expect_close("y in place", gx.download(), y, 1e-5);
    }
  }
}
