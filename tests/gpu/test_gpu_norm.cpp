// kernels/cuda/norm.cu against kernels/cpu/norm.cpp: forward (with and without the fused ReLU; relative
// 1e-5) and backward (with and without the ReLU mask; 1e-4: dx combines sums over C*S values), in place,
// and with dgamma/dbeta accumulated.
#define BOOST_TEST_MODULE gpu_norm
#include "tests/gpu/gpu_testing.h"

#include "kernels/cpu/norm.h"
#include "kernels/cuda/norm.h"

using namespace dp;
using namespace dp::gpu_test;

BOOST_AUTO_TEST_CASE(forward_and_backward_match_cpu) {
  struct Shape {
    int64_t n, channels, spatial;
  };
  for (const Shape s : {Shape{1, 1, 1}, Shape{3, 5, 49}, Shape{16, 16, 784}, Shape{4, 32, 196}})
    for (const bool relu : {false, true}) {
      BOOST_TEST_CONTEXT("n=" << s.n << " C=" << s.channels << " S=" << s.spatial << " relu=" << relu) {
        auto g = rng(uint64_t(s.n * 7 + s.channels * 131 + s.spatial * 1009 + relu));
        const size_t total = size_t(s.n * s.channels * s.spatial);
        const auto x = uniform(g, total, -2.0f, 3.0f), gamma = uniform(g, size_t(s.channels), 0.5f, 1.5f),
                   beta = uniform(g, size_t(s.channels)), dy = uniform(g, total);
        std::vector<float> y(total), mean(size_t(s.n)), rstd(size_t(s.n)), dx(total), dgamma(gamma.size()),
            dbeta(beta.size());
        cpu::norm2d_forward(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data(), s.n,
                            s.channels, s.spatial, relu);
        cpu::norm2d_backward(x.data(), gamma.data(), mean.data(), rstd.data(), dy.data(), relu ? y.data() : nullptr,
                             dx.data(), dgamma.data(), dbeta.data(), s.n, s.channels, s.spatial);

        DeviceBuffer<float> gx(x), ggamma(gamma), gbeta(beta), gdy(dy);
        auto gy = poisoned(total), gmean = poisoned(mean.size()), grstd = poisoned(rstd.size()),
             gdx = poisoned(total), gdgamma = poisoned(gamma.size()), gdbeta = poisoned(beta.size());
        cuda::norm2d_forward(gx.data(), ggamma.data(), gbeta.data(), gy.data(), gmean.data(), grstd.data(), s.n,
                             s.channels, s.spatial, relu);
        expect_close("y", gy.download(), y, 1e-5);
        expect_close("mean", gmean.download(), mean, 1e-5);
        expect_close("rstd", grstd.download(), rstd, 1e-5);
        // Backward from the CPU's statistics and output, so that only the backward is compared.
        gmean.upload(mean);
        grstd.upload(rstd);
        gy.upload(y);
        cuda::norm2d_backward(gx.data(), ggamma.data(), gmean.data(), grstd.data(), gdy.data(),
                              relu ? gy.data() : nullptr, gdx.data(), gdgamma.data(), gdbeta.data(), s.n,
                              s.channels, s.spatial);
        expect_close("dx", gdx.download(), dx, 1e-4);
        expect_close("dgamma", gdgamma.download(), dgamma, 1e-4);
        expect_close("dbeta", gdbeta.download(), dbeta, 1e-4);

        // In place: y over x, dx over dy.
        DeviceBuffer<float> gxy(x);
        cuda::norm2d_forward(gxy.data(), ggamma.data(), gbeta.data(), gxy.data(), gmean.data(), grstd.data(), s.n,
                             s.channels, s.spatial, relu);
        expect_close("y in place", gxy.download(), y, 1e-5);
        gmean.upload(mean);
        grstd.upload(rstd);
        cuda::norm2d_backward(gx.data(), ggamma.data(), gmean.data(), grstd.data(), gdy.data(),
                              relu ? gy.data() : nullptr, gdy.data(), gdgamma.data(), gdbeta.data(), s.n,
                              s.channels, s.spatial);
        expect_close("dx in place", gdy.download(), dx, 1e-4);

        // accumulate: dgamma, dbeta added to non-zero values; dx still overwritten.
        const auto dg0 = uniform(g, gamma.size()), db0 = uniform(g, beta.size());
        std::vector<float> dx_acc(total), dg_acc = dg0, db_acc = db0;
        cpu::norm2d_backward(x.data(), gamma.data(), mean.data(), rstd.data(), dy.data(), relu ? y.data() : nullptr,
                             dx_acc.data(), dg_acc.data(), db_acc.data(), s.n, s.channels, s.spatial, true);
        DeviceBuffer<float> gdy2(dy), gdg2(dg0), gdb2(db0);
        auto gdx2 = poisoned(total);
        cuda::norm2d_backward(gx.data(), ggamma.data(), gmean.data(), grstd.data(), gdy2.data(),
                              relu ? gy.data() : nullptr, gdx2.data(), gdg2.data(), gdb2.data(), s.n, s.channels,
                              s.spatial, true);
        expect_close("dx (accumulate)", gdx2.download(), dx_acc, 1e-4);
        expect_close("dgamma (accumulate)", gdg2.download(), dg_acc, 1e-4);
        expect_close("dbeta (accumulate)", gdb2.download(), db_acc, 1e-4);
      }
    }
}

BOOST_AUTO_TEST_CASE(empty_batch_zeroes_or_keeps_parameter_gradients) {
  DeviceBuffer<float> x(0), gamma(std::vector<float>(4, 1.0f)), mean(0), rstd(0), dy(0), dx(0);
  auto dg = poisoned(4), db = poisoned(4);
  cuda::norm2d_backward(x.data(), gamma.data(), mean.data(), rstd.data(), dy.data(), nullptr, dx.data(), dg.data(),
                        db.data(), 0, 4, 9);
  BOOST_TEST(dg.download() == std::vector<float>(4, 0.0f));
  BOOST_TEST(db.download() == std::vector<float>(4, 0.0f));
  const std::vector<float> dg0 = {1, 2, 3, 4}, db0 = {-1, -2, -3, -4};
  dg.upload(dg0);
  db.upload(db0);
  cuda::norm2d_backward(x.data(), gamma.data(), mean.data(), rstd.data(), dy.data(), nullptr, dx.data(), dg.data(),
                        db.data(), 0, 4, 9, true);
  BOOST_TEST(dg.download() == dg0);
  BOOST_TEST(db.download() == db0);
}
