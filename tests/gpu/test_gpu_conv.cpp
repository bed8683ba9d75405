// kernels/cuda/conv.cu (cuDNN) against kernels/cpu/conv.cpp (im2col + GEMM): y, dx, dw, db (overwritten
// and accumulated) for padded, strided, pointwise and the CNN's own shapes. Tolerance 1e-4 relative
// (cuDNN may pick Winograd or FFT algorithms, whose fp32 rounding differs more from a direct sum than a
// GEMM's).
#define BOOST_TEST_MODULE gpu_conv
#include "tests/gpu/gpu_testing.h"

#include "kernels/cpu/conv.h"
#include "kernels/cuda/conv.h"

using namespace dp;
using namespace dp::gpu_test;

namespace {

constexpr double kTol = 1e-4;

cpu::ConvShape shape(int64_t n, int64_t c, int64_t h, int64_t w, int64_t o, int64_t k, int64_t stride, int64_t pad) {
  cpu::ConvShape s;
  s.n = n;
  s.in_channels = c;
  s.height = h;
  s.width = w;
  s.out_channels = o;
  s.kernel = k;
  s.stride = stride;
  s.pad = pad;
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(forward_and_backward_match_cpu) {
  const cpu::ConvShape shapes[] = {
      shape(3, 2, 9, 11, 4, 3, 1, 1),     // padded, non-square
      shape(2, 3, 12, 12, 5, 3, 2, 1),    // strided (the CNN's downsampling)
      shape(2, 4, 7, 7, 3, 1, 1, 0),      // pointwise
      shape(2, 3, 13, 10, 4, 5, 2, 0),    // larger kernel, unpadded, odd sizes
      shape(8, 1, 28, 28, 16, 3, 1, 1),   // CNN stem on Fashion-MNIST
      shape(8, 16, 28, 28, 16, 3, 1, 1),  // CNN stage 1 block
      shape(8, 16, 28, 28, 32, 3, 2, 1),  // CNN stage 2 downsampling
      shape(8, 32, 14, 14, 32, 3, 1, 1),  // CNN stage 2 block
  };
  for (const cpu::ConvShape& s : shapes) {
    BOOST_TEST_CONTEXT("n=" << s.n << " C=" << s.in_channels << " " << s.height << "x" << s.width
                            << " O=" << s.out_channels << " K=" << s.kernel << " stride=" << s.stride
                            << " pad=" << s.pad) {
      auto g = rng(uint64_t(s.n * 131 + s.in_channels * 17 + s.height * 7 + s.out_channels * 3 + s.kernel +
                            s.stride * 1000 + s.pad * 10000));
      const int64_t x_size = s.n * s.in_channels * s.height * s.width;
      const int64_t y_size = s.n * s.out_channels * s.out_height() * s.out_width();
      const int64_t w_size = s.out_channels * s.in_channels * s.kernel * s.kernel;
      const auto x = uniform(g, size_t(x_size)), w = uniform(g, size_t(w_size), -0.3f, 0.3f),
                 b = uniform(g, size_t(s.out_channels)), dy = uniform(g, size_t(y_size));
      std::vector<float> y(static_cast<size_t>(y_size)), dx(x.size()), dw(w.size()), db(b.size());
      std::vector<float> workspace(size_t(std::max<int64_t>(cpu::conv2d_workspace(s), 1)));
      cpu::conv2d_forward(s, x.data(), w.data(), b.data(), y.data(), workspace.data());
      cpu::conv2d_backward(s, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(), workspace.data());

      DeviceBuffer<float> gx(x), gw(w), gb(b), gdy(dy);
      auto gy = poisoned(y.size()), gdx = poisoned(dx.size()), gdw = poisoned(dw.size()), gdb = poisoned(db.size());
      cuda::conv2d_forward(s, gx.data(), gw.data(), gb.data(), gy.data());
      cuda::conv2d_backward(s, gx.data(), gw.data(), gdy.data(), gdx.data(), gdw.data(), gdb.data());
      expect_close("y", gy.download(), y, kTol);
      expect_close("dx", gdx.download(), dx, kTol);
      expect_close("dw", gdw.download(), dw, kTol);
      expect_close("db", gdb.download(), db, kTol);

      auto gdw2 = poisoned(dw.size()), gdb2 = poisoned(db.size());
      cuda::conv2d_backward(s, gx.data(), gw.data(), gdy.data(), nullptr, gdw2.data(), gdb2.data());
      expect_close("dw (no dx)", gdw2.download(), dw, kTol);
      expect_close("db (no dx)", gdb2.download(), db, kTol);

      // accumulate: dw, db added to non-zero values; dx still overwritten.
      const auto dw0 = uniform(g, dw.size()), db0 = uniform(g, db.size());
      std::vector<float> dx_acc(dx.size()), dw_acc = dw0, db_acc = db0;
      cpu::conv2d_backward(s, x.data(), w.data(), dy.data(), dx_acc.data(), dw_acc.data(), db_acc.data(),
                           workspace.data(), true);
      DeviceBuffer<float> gdw3(dw0), gdb3(db0);
      auto gdx3 = poisoned(dx.size());
      cuda::conv2d_backward(s, gx.data(), gw.data(), gdy.data(), gdx3.data(), gdw3.data(), gdb3.data(), nullptr,
                            true);
      expect_close("dx (accumulate)", gdx3.download(), dx_acc, kTol);
      expect_close("dw (accumulate)", gdw3.download(), dw_acc, kTol);
      expect_close("db (accumulate)", gdb3.download(), db_acc, kTol);
    }
  }
}

BOOST_AUTO_TEST_CASE(empty_batch_zeroes_parameter_gradients) {
  const cpu::ConvShape s = shape(0, 2, 5, 5, 3, 3, 1, 1);
  DeviceBuffer<float> x(0), w(54), dy(0), dw = poisoned(54), db = poisoned(3);
  w.zero();
  cuda::conv2d_backward(s, x.data(), w.data(), dy.data(), nullptr, dw.data(), db.data());
  BOOST_TEST(dw.download() == std::vector<float>(54, 0.0f));
  BOOST_TEST(db.download() == std::vector<float>(3, 0.0f));
  // accumulate: left as they are.
  const std::vector<float> dw0(54, 1.5f), db0(3, -2.0f);
  dw.upload(dw0);
  db.upload(db0);
  cuda::conv2d_backward(s, x.data(), w.data(), dy.data(), nullptr, dw.data(), db.data(), nullptr, true);
  BOOST_TEST(dw.download() == dw0);
  BOOST_TEST(db.download() == db0);
}
