// Helpers shared by the model tests: seeded random inputs, float central differences, and the
// comparison used against them.
#pragma once

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "lib/core/rng.h"

namespace gradient_testing {

// n normal values with the given scale and mean, drawn from `seed`.
inline std::vector<float> random_vector(size_t n, uint64_t seed, double scale = 1.0, double mean = 0.0) {
  dp::Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = float(mean + rng.normal() * scale);
  return v;
}

// Relative difference with a floor so that tiny gradients compare absolutely.
inline double rel_diff(double a, double b, double floor = 1e-2) {
  return std::abs(a - b) / std::max(floor, std::abs(a) + std::abs(b));
}

// Central difference of f with respect to v[i] (float storage, double evaluation).
inline double numeric_grad(std::vector<float>& v, size_t i, const std::function<double()>& f, float eps) {
  const float saved = v[i];
  v[i] = saved + eps;
  const double up = f();
  v[i] = saved - eps;
  const double down = f();
  v[i] = saved;
  return (up - down) / (2.0 * double(eps));
}

// The scalar loss sum(y * r) makes dL/dy = r. Both equally long and not empty: a gradient check over
// an empty output would pass without checking anything.
inline double dot(const std::vector<float>& a, const std::vector<float>& b) {
  BOOST_TEST_REQUIRE(!b.empty(), "dot of empty vectors");
  BOOST_TEST_REQUIRE(a.size() == b.size(), "dot of " << a.size() << " and " << b.size() << " values");
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += double(a[i]) * double(b[i]);
  return s;
}

}  // namespace gradient_testing
