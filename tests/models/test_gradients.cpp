// Every layer's backward, and the whole MLP's gradient, against central finite differences.
#define BOOST_TEST_MODULE gradients
#include <boost/test/unit_test.hpp>

#include "gradient_testing.h"

#include <cmath>
#include <functional>
#include <vector>

#include "kernels/cpu/ops.h"
#include "lib/core/rng.h"
#include "models/mlp.h"

using namespace gradient_testing;

BOOST_AUTO_TEST_CASE(linear_backward_matches_finite_differences) {
  const int64_t n = 5, in = 7, out = 4;
  auto x = random_vector(size_t(n * in), 1), w = random_vector(size_t(out * in), 2),
       b = random_vector(size_t(out), 3), r = random_vector(size_t(n * out), 4);
  std::vector<float> y(size_t(n * out)), dx(x.size()), dw(w.size()), db(b.size());
  auto loss = [&] {
    dp::cpu::linear_forward(x.data(), w.data(), b.data(), y.data(), n, in, out);
    return dot(y, r);
  };
  dp::cpu::linear_backward(x.data(), w.data(), r.data(), dx.data(), dw.data(), db.data(), n, in, out, false);
  for (size_t i = 0; i < w.size(); ++i) BOOST_TEST(rel_diff(dw[i], numeric_grad(w, i, loss, 1e-2f)) < 1e-3);
  for (size_t i = 0; i < b.size(); ++i) BOOST_TEST(rel_diff(db[i], numeric_grad(b, i, loss, 1e-2f)) < 1e-3);
  for (size_t i = 0; i < x.size(); ++i) BOOST_TEST(rel_diff(dx[i], numeric_grad(x, i, loss, 1e-2f)) < 3e-3);
}

// The slice kernels, slice by slice, give the whole layer's results (up to the order of summation), and
// each writes only its own rows.
BOOST_AUTO_TEST_CASE(linear_slices_compose_to_the_whole_layer) {
  const int64_t n = 6, in = 9, out = 7;
  const std::vector<int64_t> cuts{0, 3, 4, 7};
  auto x = random_vector(size_t(n * in), 5), w = random_vector(size_t(out * in), 6),
       b = random_vector(size_t(out), 7), dy = random_vector(size_t(n * out), 8);
  std::vector<float> y(size_t(n * out)), dx(x.size()), dw(w.size()), db(b.size());
  dp::cpu::linear_forward(x.data(), w.data(), b.data(), y.data(), n, in, out);
  dp::cpu::linear_backward(x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(), n, in, out, false);

  const float poison = 1e30f;
  std::vector<float> ys(y.size(), poison), dxs(dx.size(), poison), dws(dw.size(), poison), dbs(db.size(), poison);
  for (size_t j = 0; j + 1 < cuts.size(); ++j) {
    dp::cpu::linear_forward_rows(x.data(), w.data(), ys.data(), n, in, out, cuts[j], cuts[j + 1]);
    dp::cpu::linear_weight_grad_rows(x.data(), dy.data(), dws.data(), n, in, out, cuts[j], cuts[j + 1], false);
    for (int64_t i = 0; i < n; ++i)  // outputs beyond this slice are still untouched
      for (int64_t o = cuts[j + 1]; o < out; ++o) BOOST_TEST(ys[size_t(i * out + o)] == poison);
    for (size_t i = size_t(cuts[j + 1] * in); i < dws.size(); ++i) BOOST_TEST(dws[i] == poison);
  }
  for (size_t j = cuts.size() - 1; j-- > 0;)  // last slice first, as backward runs
    dp::cpu::linear_input_grad_rows(dy.data(), w.data(), dxs.data(), n, in, out, cuts[j], cuts[j + 1],
                                    /*accumulate=*/j + 2 < cuts.size());
  dp::cpu::linear_add_bias(b.data(), ys.data(), n, out);
  dp::cpu::linear_bias_grad(dy.data(), dbs.data(), n, out, false);
  auto close = [](const std::vector<float>& got, const std::vector<float>& want) {
    BOOST_TEST_REQUIRE(!want.empty(), "nothing to compare");
    BOOST_TEST_REQUIRE(got.size() == want.size(), got.size() << " values against " << want.size());
    for (size_t i = 0; i < got.size(); ++i) BOOST_TEST(rel_diff(got[i], want[i]) < 1e-5);
  };
  close(ys, y);
  close(dws, dw);
  close(dxs, dx);
  close(dbs, db);
}

BOOST_AUTO_TEST_CASE(linear_backward_with_no_samples_zeroes_gradients) {
  std::vector<float> w(6, 1.0f), dw(6, 7.0f), db(3, 7.0f);
  dp::cpu::linear_backward(nullptr, w.data(), nullptr, nullptr, dw.data(), db.data(), 0, 2, 3, false);
  for (float g : dw) BOOST_TEST(g == 0.0f);
  for (float g : db) BOOST_TEST(g == 0.0f);
}

// Accumulating over two micro-batches gives the parameter gradients of the whole batch (what a pipeline
// stage does across the micro-batches of a mini-batch); dx stays each micro-batch's own.
BOOST_AUTO_TEST_CASE(linear_backward_accumulates_micro_batches) {
  const int64_t n1 = 3, n2 = 4, n = n1 + n2, in = 6, out = 5;
  auto x = random_vector(size_t(n * in), 31), w = random_vector(size_t(out * in), 32),
       dy = random_vector(size_t(n * out), 33);
  std::vector<float> dx(x.size()), dw(w.size()), db(static_cast<size_t>(out));
  dp::cpu::linear_backward(x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(), n, in, out, false);
  std::vector<float> dx2(x.size()), dw2(w.size(), 1e30f), db2(size_t(out), 1e30f);
  dp::cpu::linear_backward(x.data(), w.data(), dy.data(), dx2.data(), dw2.data(), db2.data(), n1, in, out, false);
  dp::cpu::linear_backward(x.data() + n1 * in, w.data(), dy.data() + n1 * out, dx2.data() + n1 * in, dw2.data(),
                           db2.data(), n2, in, out, true);
  for (size_t i = 0; i < dw.size(); ++i) BOOST_TEST(rel_diff(dw2[i], dw[i]) < 1e-5);
  for (size_t i = 0; i < db.size(); ++i) BOOST_TEST(rel_diff(db2[i], db[i]) < 1e-5);
  for (size_t i = 0; i < dx.size(); ++i) BOOST_TEST(rel_diff(dx2[i], dx[i]) < 1e-5);
  // Slices accumulate the same way, and no samples leave an accumulated gradient as it is.
  std::vector<float> dws(w.size(), 1e30f), dbs(static_cast<size_t>(out));
  for (int64_t part : {0, 1}) {
    const int64_t first = part ? n1 : 0, count = part ? n2 : n1;
    for (int64_t o : {int64_t(0), int64_t(2)})
      dp::cpu::linear_weight_grad_rows(x.data() + first * in, dy.data() + first * out, dws.data(), count, in, out, o,
                                       o == 0 ? 2 : out, part == 1);
    dp::cpu::linear_bias_grad(dy.data() + first * out, dbs.data(), count, out, part == 1);
  }
  dp::cpu::linear_backward(nullptr, w.data(), nullptr, nullptr, dws.data(), dbs.data(), 0, in, out, true);
  for (size_t i = 0; i < dw.size(); ++i) BOOST_TEST(rel_diff(dws[i], dw[i]) < 1e-5);
  for (size_t i = 0; i < db.size(); ++i) BOOST_TEST(rel_diff(dbs[i], db[i]) < 1e-5);
}

BOOST_AUTO_TEST_CASE(relu_backward_matches_finite_differences) {
  auto x = random_vector(64, 5);
  for (auto& v : x)
    if (std::abs(v) < 0.05f) v = 0.1f;  // keep away from the kink
  const auto r = random_vector(64, 6);
  std::vector<float> y(64), dx(64);
  auto loss = [&] {
    dp::cpu::relu_forward(x.data(), y.data(), 64);
    return dot(y, r);
  };
  loss();
  dp::cpu::relu_backward(y.data(), r.data(), dx.data(), 64);
  for (size_t i = 0; i < x.size(); ++i) BOOST_TEST(rel_diff(dx[i], numeric_grad(x, i, loss, 1e-3f)) < 1e-3);
}

BOOST_AUTO_TEST_CASE(softmax_cross_entropy_matches_finite_differences) {
  const int64_t n = 6, classes = 5;
  auto logits = random_vector(size_t(n * classes), 7, 2.0);
  const std::vector<int32_t> labels{0, 4, 2, 2, 1, 3};
  std::vector<float> d(logits.size());
  const float scale = 0.25f;
  const auto sums = dp::cpu::softmax_cross_entropy(logits.data(), labels.data(), d.data(), n, classes, scale);
  auto loss = [&] {
    return scale * dp::cpu::softmax_cross_entropy(logits.data(), labels.data(), nullptr, n, classes, 1.0f).loss;
  };
  BOOST_TEST(sums.loss > 0.0);
  for (size_t i = 0; i < logits.size(); ++i)
    BOOST_TEST(rel_diff(d[i], numeric_grad(logits, i, loss, 1e-2f)) < 2e-3);
}

BOOST_AUTO_TEST_CASE(softmax_cross_entropy_values) {
  // Two equal logits: loss log(2) each; arg-max ties go to the first class.
  const std::vector<float> logits{1.0f, 1.0f, 3.0f, -1.0f};
  const std::vector<int32_t> labels{1, 0};
  const auto s = dp::cpu::softmax_cross_entropy(logits.data(), labels.data(), nullptr, 2, 2, 1.0f);
  BOOST_TEST(s.loss == std::log(2.0) + std::log(1.0 + std::exp(-4.0)), boost::test_tools::tolerance(1e-6));
  BOOST_TEST(s.correct == 1);
}

// Independent double-precision reference of the MLP's mean loss, reading the model's flat float buffer
// with the documented layout: per layer w (out, in) then b (out); ReLU after all but the last layer.
double reference_mlp_loss(const std::vector<double>& p, const std::vector<int64_t>& widths,
                          const std::vector<float>& x, const std::vector<int32_t>& y) {
  const size_t n = y.size();
  double total = 0;
  for (size_t s = 0; s < n; ++s) {
    std::vector<double> a(x.begin() + long(s * size_t(widths[0])), x.begin() + long((s + 1) * size_t(widths[0])));
    size_t off = 0;
    for (size_t l = 0; l + 1 < widths.size(); ++l) {
      const size_t in = size_t(widths[l]), out = size_t(widths[l + 1]);
      std::vector<double> z(out);
      for (size_t o = 0; o < out; ++o) {
        double acc = p[off + out * in + o];
        for (size_t i = 0; i < in; ++i) acc += p[off + o * in + i] * a[i];
        z[o] = (l + 2 < widths.size()) ? std::max(0.0, acc) : acc;
      }
      off += out * in + out;
      a = z;
    }
    double zmax = a[0], denom = 0;
    for (double v : a) zmax = std::max(zmax, v);
    for (double v : a) denom += std::exp(v - zmax);
    total += std::log(denom) - (a[size_t(y[s])] - zmax);
  }
  return total / double(n);
}

BOOST_AUTO_TEST_CASE(whole_mlp_gradient_matches_finite_differences) {
  const int64_t n = 8, features = 6, classes = 4;
  const std::vector<int64_t> widths{features, 10, 7, classes};
  dp::Mlp model({10, 7}, features, classes, /*seed=*/11);
  const auto x = random_vector(size_t(n * features), 12);
  const std::vector<int32_t> y{0, 1, 2, 3, 3, 2, 1, 0};
  const auto stats = model.forward_backward({n, x.data(), nullptr, y.data()}, 1.0f / float(n));
  std::vector<double> p(model.params().begin(), model.params().end());
  // The float model and the double reference agree on the loss itself...
  BOOST_TEST(stats.loss_sum / double(n) == reference_mlp_loss(p, widths, x, y), boost::test_tools::tolerance(1e-5));
  // ...and every parameter's gradient matches the reference's central difference (step 1e-6 in double,
  // far too small to cross a ReLU kink).
  int checked = 0;
  for (size_t i = 0; i < p.size(); ++i, ++checked) {
    const double saved = p[i], h = 1e-6;
    p[i] = saved + h;
    const double up = reference_mlp_loss(p, widths, x, y);
    p[i] = saved - h;
    const double down = reference_mlp_loss(p, widths, x, y);
    p[i] = saved;
    const double numeric = (up - down) / (2 * h), analytic = model.grads()[i];
    BOOST_TEST(std::abs(analytic - numeric) < 1e-5 + 1e-3 * std::abs(numeric),
               "parameter " << i << ": analytic " << analytic << ", numeric " << numeric);
  }
  BOOST_TEST(checked == int(model.params().size()));
  BOOST_TEST(model.layers().size() == 5u);  // fc1 relu1 fc2 relu2 fc3
}

BOOST_AUTO_TEST_CASE(layer_list_reports_sizes_and_flops) {
  dp::Mlp model({16}, 8, 3, 1);
  const auto& l = model.layers();
  BOOST_TEST(l[0].kind == "linear");
  BOOST_TEST(l[0].param_count == 16 * 8 + 16);
  BOOST_TEST(l[0].flops_per_sample == 2.0 * 8 * 16);
  BOOST_TEST(l[2].param_offset == 16 * 8 + 16);
  BOOST_TEST(int64_t(model.params().size()) == l[0].param_count + l[2].param_count);
  dp::Mlp same({16}, 8, 3, 99), other({17}, 8, 3, 1);
  BOOST_TEST(model.fingerprint() == same.fingerprint());   // values do not matter
  BOOST_TEST(model.fingerprint() != other.fingerprint());  // shapes do
}
