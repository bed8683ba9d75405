// kernels/cuda/norm.cu against kernels/cpu/norm.cpp: forward (with and without the fused ReLU; relative
// 1e-5) and backward (with and without the ReLU mask; 1e-4: dx combines sums over C*S values), in place.
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
      }
    }
}
