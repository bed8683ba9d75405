// kernels/cuda/layernorm.cu against kernels/cpu/layernorm.cpp: y, mean, rstd (relative 1e-5), also y over x;
// dx added to a non-zero dx, dgamma, dbeta (1e-5; dgamma/dbeta sum over up to 1024 rows); dx over dy.
#define BOOST_TEST_MODULE gpu_layernorm
#include "tests/gpu/gpu_testing.h"

#include "kernels/cpu/layernorm.h"
#include "kernels/cuda/layernorm.h"

using namespace dp;
using namespace dp::gpu_test;

BOOST_AUTO_TEST_CASE(forward_and_backward_match_cpu) {
  struct Shape {
    int64_t n, c;
  };
  for (const Shape s : {Shape{1, 1}, Shape{67, 96}, Shape{16, 768}, Shape{1024, 128}, Shape{3, 1000}}) {
    BOOST_TEST_CONTEXT("N=" << s.n << " C=" << s.c) {
      auto g = rng(uint64_t(s.n * 7919 + s.c));
      const size_t total = size_t(s.n * s.c);
      const auto x = uniform(g, total, -2.0f, 3.0f), gamma = uniform(g, size_t(s.c), 0.5f, 1.5f),
                 beta = uniform(g, size_t(s.c)), dy = uniform(g, total), dx0 = uniform(g, total);
      std::vector<float> y(total), mean(size_t(s.n)), rstd(size_t(s.n)), dx = dx0, dgamma(size_t(s.c)),
          dbeta(size_t(s.c));
      cpu::layernorm_forward(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data(), s.n, s.c);
      cpu::layernorm_backward(x.data(), gamma.data(), mean.data(), rstd.data(), dy.data(), dx.data(), dgamma.data(),
                              dbeta.data(), s.n, s.c, false);

      DeviceBuffer<float> gx(x), ggamma(gamma), gbeta(beta), gdy(dy), gdx(dx0);
      auto gy = poisoned(total), gmean = poisoned(mean.size()), grstd = poisoned(rstd.size()),
           gdgamma = poisoned(gamma.size()), gdbeta = poisoned(beta.size());
      cuda::layernorm_forward(gx.data(), ggamma.data(), gbeta.data(), gy.data(), gmean.data(), grstd.data(), s.n,
                              s.c);
      expect_close("y", gy.download(), y, 1e-5);
      expect_close("mean", gmean.download(), mean, 1e-5);
      expect_close("rstd", grstd.download(), rstd, 1e-5);
      DeviceBuffer<float> gxy(x);  // y over x
      cuda::layernorm_forward(gxy.data(), ggamma.data(), gbeta.data(), gxy.data(), gmean.data(), grstd.data(), s.n,
                              s.c);
      expect_close("y in place", gxy.download(), y, 1e-5);
      gmean.upload(mean);
      grstd.upload(rstd);
      cuda::layernorm_backward(gx.data(), ggamma.data(), gmean.data(), grstd.data(), gdy.data(), gdx.data(),
                               gdgamma.data(), gdbeta.data(), s.n, s.c, false);
      expect_close("dx", gdx.download(), dx, 1e-5);
      expect_close("dgamma", gdgamma.download(), dgamma, 1e-5);
      expect_close("dbeta", gdbeta.download(), dbeta, 1e-5);
      // Accumulated: the same rows again double dgamma and dbeta (dx adds dL/dx once more).
      DeviceBuffer<float> gdx_again(dx0);
      cuda::layernorm_backward(gx.data(), ggamma.data(), gmean.data(), grstd.data(), gdy.data(), gdx_again.data(),
                               gdgamma.data(), gdbeta.data(), s.n, s.c, true);
      std::vector<float> dgamma_twice = dgamma, dbeta_twice = dbeta;
      for (float& v : dgamma_twice) v *= 2;
      for (float& v : dbeta_twice) v *= 2;
      expect_close("dgamma (accumulated)", gdgamma.download(), dgamma_twice, 1e-5);
      expect_close("dbeta (accumulated)", gdbeta.download(), dbeta_twice, 1e-5);

      // dx over dy: the result is dy + dL/dx (the CPU's dx with dx0 replaced by dy).
      std::vector<float> dx_alias = dy, dg2(size_t(s.c)), db2(size_t(s.c));
      cpu::layernorm_backward(x.data(), gamma.data(), mean.data(), rstd.data(), dy.data(), dx_alias.data(),
                              dg2.data(), db2.data(), s.n, s.c, false);
      cuda::layernorm_backward(gx.data(), ggamma.data(), gmean.data(), grstd.data(), gdy.data(), gdy.data(),
                               gdgamma.data(), gdbeta.data(), s.n, s.c, false);
      expect_close("dx in place", gdy.download(), dx_alias, 1e-5);
      expect_close("dgamma (dx in place)", gdgamma.download(), dg2, 1e-5);
    }
  }
}
