// kernels/cuda/linear.cu against kernels/cpu/linear.cpp: y, dx, dw, db (whole layers and slices,
// overwritten and accumulated), and
// matmul's transposes.
#define BOOST_TEST_MODULE gpu_linear
#include "tests/gpu/gpu_testing.h"

#include <cblas.h>

#include "kernels/cpu/ops.h"
#include "kernels/cuda/linear.h"

using namespace dp;
using namespace dp::gpu_test;

namespace {
constexpr double kTol = 1e-5;  // fp32 GEMMs, K <= 784: different summation orders differ by ~1e-7
}

BOOST_AUTO_TEST_CASE(forward_and_backward_match_cpu) {
  struct Shape {
    int64_t n, in, out;
  };
  for (const Shape s : {Shape{1, 1, 1}, Shape{37, 53, 29}, Shape{128, 784, 256}, Shape{5, 300, 10}}) {
    BOOST_TEST_CONTEXT("n=" << s.n << " in=" << s.in << " out=" << s.out) {
      auto g = rng(uint64_t(s.n * 1000003 + s.in * 1009 + s.out));
      const auto x = uniform(g, size_t(s.n * s.in)), w = uniform(g, size_t(s.out * s.in), -0.1f, 0.1f),
                 b = uniform(g, size_t(s.out)), dy = uniform(g, size_t(s.n * s.out));
      std::vector<float> y(size_t(s.n * s.out)), dx(x.size()), dw(w.size()), db(b.size());
      cpu::linear_forward(x.data(), w.data(), b.data(), y.data(), s.n, s.in, s.out);
      cpu::linear_backward(x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(), s.n, s.in, s.out,
                           false);

      DeviceBuffer<float> gx(x), gw(w), gb(b), gdy(dy);
      auto gy = poisoned(y.size()), gdx = poisoned(dx.size()), gdw = poisoned(dw.size()), gdb = poisoned(db.size());
      cuda::linear_forward(gx.data(), gw.data(), gb.data(), gy.data(), s.n, s.in, s.out);
      cuda::linear_backward(gx.data(), gw.data(), gdy.data(), gdx.data(), gdw.data(), gdb.data(), s.n, s.in,
                            s.out, false);
      expect_close("y", gy.download(), y, kTol);
      expect_close("dx", gdx.download(), dx, kTol);
      expect_close("dw", gdw.download(), dw, kTol);
      expect_close("db", gdb.download(), db, kTol);

      // dx skipped when null; dw, db unchanged by that.
      auto gdw2 = poisoned(dw.size()), gdb2 = poisoned(db.size());
      cuda::linear_backward(gx.data(), gw.data(), gdy.data(), nullptr, gdw2.data(), gdb2.data(), s.n, s.in, s.out,
                            false);
      expect_close("dw (no dx)", gdw2.download(), dw, kTol);
      expect_close("db (no dx)", gdb2.download(), db, kTol);

      // Accumulating the same micro-batch again doubles the parameter gradients.
      cuda::linear_backward(gx.data(), gw.data(), gdy.data(), nullptr, gdw2.data(), gdb2.data(), s.n, s.in, s.out,
                            true);
      std::vector<float> dw_twice = dw, db_twice = db;
      for (float& v : dw_twice) v *= 2;
      for (float& v : db_twice) v *= 2;
      expect_close("dw (accumulated)", gdw2.download(), dw_twice, kTol);
      expect_close("db (accumulated)", gdb2.download(), db_twice, kTol);
    }
  }
}

// The slice kernels against their CPU twins, slice by slice (the way the MLP runs a sliced layer).
BOOST_AUTO_TEST_CASE(slices_match_cpu) {
  const int64_t n = 37, in = 53, out = 29;
  const std::vector<int64_t> cuts{0, 10, 11, 29};
  auto g = rng(77);
  const auto x = uniform(g, size_t(n * in)), w = uniform(g, size_t(out * in), -0.1f, 0.1f),
             b = uniform(g, size_t(out)), dy = uniform(g, size_t(n * out));
  std::vector<float> y(size_t(n * out)), dx(x.size()), dw(w.size()), db(b.size());
  DeviceBuffer<float> gx(x), gw(w), gb(b), gdy(dy);
  auto gy = poisoned(y.size()), gdx = poisoned(dx.size()), gdw = poisoned(dw.size()), gdb = poisoned(db.size());
  for (size_t j = cuts.size() - 1; j-- > 0;) {
    const bool accumulate = j + 2 < cuts.size();
    cpu::linear_forward_rows(x.data(), w.data(), y.data(), n, in, out, cuts[j], cuts[j + 1]);
    cpu::linear_weight_grad_rows(x.data(), dy.data(), dw.data(), n, in, out, cuts[j], cuts[j + 1], false);
    cpu::linear_input_grad_rows(dy.data(), w.data(), dx.data(), n, in, out, cuts[j], cuts[j + 1], accumulate);
    cuda::linear_forward_rows(gx.data(), gw.data(), gy.data(), n, in, out, cuts[j], cuts[j + 1]);
    cuda::linear_weight_grad_rows(gx.data(), gdy.data(), gdw.data(), n, in, out, cuts[j], cuts[j + 1], false);
    cuda::linear_input_grad_rows(gdy.data(), gw.data(), gdx.data(), n, in, out, cuts[j], cuts[j + 1], accumulate);
  }
  cpu::linear_add_bias(b.data(), y.data(), n, out);
  cpu::linear_bias_grad(dy.data(), db.data(), n, out, false);
  cuda::linear_add_bias(gb.data(), gy.data(), n, out);
  cuda::linear_bias_grad(gdy.data(), gdb.data(), n, out, false);
  expect_close("y", gy.download(), y, kTol);
  expect_close("dx", gdx.download(), dx, kTol);
  expect_close("dw", gdw.download(), dw, kTol);
  expect_close("db", gdb.download(), db, kTol);
}

BOOST_AUTO_TEST_CASE(empty_batch_zeroes_parameter_gradients) {
  DeviceBuffer<float> x(0), w(6), dy(0), dw = poisoned(6), db = poisoned(3);
  w.zero();
  cuda::linear_backward(x.data(), w.data(), dy.data(), nullptr, dw.data(), db.data(), 0, 2, 3, false);
  BOOST_TEST(dw.download() == std::vector<float>(6, 0.0f));
  BOOST_TEST(db.download() == std::vector<float>(3, 0.0f));
}

BOOST_AUTO_TEST_CASE(matmul_transposes_match_cblas) {
  const int64_t m = 19, n = 23, k = 31;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      BOOST_TEST_CONTEXT("trans_a=" << ta << " trans_b=" << tb) {
        auto g = rng(uint64_t(7 + 2 * ta + tb));
        // Padded leading dimensions exercise lda/ldb/ldc.
        const int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 2, ldc = n + 5;
        const auto a = uniform(g, size_t((ta ? k : m) * lda)), b = uniform(g, size_t((tb ? n : k) * ldb));
        const auto c0 = uniform(g, size_t(m * ldc));
        std::vector<float> c = c0;
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(m), int(n),
                    int(k), 0.5f, a.data(), int(lda), b.data(), int(ldb), 2.0f, c.data(), int(ldc));
        DeviceBuffer<float> ga(a), gb(b), gc(c0);
        cuda::matmul(ta, tb, m, n, k, 0.5f, ga.data(), lda, gb.data(), ldb, 2.0f, gc.data(), ldc);
        expect_close("c", gc.download(), c, kTol);
      }
}
