// kernels/cuda/pool.cu against kernels/cpu/pool.cpp (mean: relative 1e-5, different summation order; gradient: 1e-6, the same float product).
#define BOOST_TEST_MODULE gpu_pool
#include "tests/gpu/gpu_testing.h"

#include "kernels/cpu/pool.h"
#include "kernels/cuda/pool.h"

using namespace dp;
using namespace dp::gpu_test;

BOOST_AUTO_TEST_CASE(global_average_pooling_matches_cpu) {
  struct Shape {
    int64_t n, channels, spatial;
  };
  for (const Shape s : {Shape{1, 1, 1}, Shape{3, 5, 49}, Shape{128, 32, 196}, Shape{2, 3, 1000}}) {
    BOOST_TEST_CONTEXT("n=" << s.n << " C=" << s.channels << " S=" << s.spatial) {
      auto g = rng(uint64_t(s.n * 7 + s.channels * 131 + s.spatial * 1009));
      const size_t rows = size_t(s.n * s.channels), total = rows * size_t(s.spatial);
      const auto x = uniform(g, total), dy = uniform(g, rows);
      std::vector<float> y(rows), dx(total);
      cpu::global_avg_pool_forward(x.data(), y.data(), s.n, s.channels, s.spatial);
      cpu::global_avg_pool_backward(dy.data(), dx.data(), s.n, s.channels, s.spatial);
      DeviceBuffer<float> gx(x), gdy(dy);
      auto gy = poisoned(rows), gdx = poisoned(total);
      cuda::global_avg_pool_forward(gx.data(), gy.data(), s.n, s.channels, s.spatial);
      cuda::global_avg_pool_backward(gdy.data(), gdx.data(), s.n, s.channels, s.spatial);
      expect_close("y", gy.download(), y, 1e-5);
      expect_close("dx", gdx.download(), dx, 1e-6);
    }
  }
}
