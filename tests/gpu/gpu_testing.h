// Shared by the GPU tests (tests/gpu/test_gpu_*.cpp): each file defines BOOST_TEST_MODULE, includes this
// header once, and compares a CUDA kernel file's operations with the CPU kernels on random inputs.
//
// main() exits 77 (CTest: skipped) when no GPU is usable. Random inputs are fresh on every run; the seed
// is printed first and DPTRAIN_TEST_SEED=<n> replays it. Comparisons (expect_close) pass when
//   ||got - want||_2 <= tol * ||want||_2   and   max |got - want| <= 10 * tol * max |want|,
// and every value is finite (outputs are poisoned with NaN before the GPU writes them, so an element
// the kernel never wrote fails).
#pragma once

#define BOOST_TEST_NO_MAIN
#if !defined(BOOST_TEST_DYN_LINK) && !defined(BOOST_TEST_ALTERNATIVE_INIT_API)
#define BOOST_TEST_ALTERNATIVE_INIT_API  // the device build compiles the framework in (boost_test_static.cpp)
#endif
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda/context.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/memory.h"

namespace dp::gpu_test {

using cuda::DeviceBuffer;

inline uint64_t& seed() {
  static uint64_t s = 0;
  return s;
}

// A generator per test case, derived from the run's seed and a salt naming the case.
inline std::mt19937_64 rng(uint64_t salt) { return std::mt19937_64(seed() ^ (salt * 0x9E3779B97F4A7C15ull)); }

inline std::vector<float> uniform(std::mt19937_64& g, size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}

inline std::vector<int32_t> integers(std::mt19937_64& g, size_t n, int32_t below) {
  std::uniform_int_distribution<int32_t> d(0, below - 1);
  std::vector<int32_t> v(n);
  for (int32_t& x : v) x = d(g);
  return v;
}

// A device buffer of `count` floats filled with NaN.
inline DeviceBuffer<float> poisoned(size_t count) {
  DeviceBuffer<float> b(count);
  b.poison();
  return b;
}

inline void expect_close(const std::string& what, const std::vector<float>& got, const std::vector<float>& want,
                         double tol) {
  BOOST_REQUIRE_EQUAL(got.size(), want.size());
  double err2 = 0, ref2 = 0, max_err = 0, max_ref = 0;
  size_t bad = 0, worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i]) || !std::isfinite(want[i])) {
      ++bad;
      continue;
    }
    const double e = std::abs(double(got[i]) - double(want[i]));
    err2 += e * e;
    ref2 += double(want[i]) * want[i];
    if (e > max_err) {
      max_err = e;
      worst = i;
    }
    max_ref = std::max(max_ref, std::abs(double(want[i])));
  }
  const double rel = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  const double max_rel = max_ref > 0 ? max_err / max_ref : max_err;
  BOOST_CHECK_MESSAGE(bad == 0 && rel <= tol && max_rel <= 10 * tol,
                      what << ": " << got.size() << " values, " << bad << " not finite, rel L2 error " << rel
                           << ", max error " << max_err << " at " << worst << " (max |want| " << max_ref
                           << "), tol " << tol << " (seed " << seed() << ")");
}

}  // namespace dp::gpu_test

int main(int argc, char* argv[]) {
  const dp::cuda::DeviceQuery q = dp::cuda::query_devices();
  if (q.count == 0) {
    std::printf("no usable GPU: %s; skipping\n", q.error.c_str());
    return 77;
  }
  const char* env = std::getenv("DPTRAIN_TEST_SEED");
  dp::gpu_test::seed() = env ? std::strtoull(env, nullptr, 10) : std::random_device{}();
  std::printf("GPU: %s; seed %llu (DPTRAIN_TEST_SEED replays it)\n", q.first_name.c_str(),
              static_cast<unsigned long long>(dp::gpu_test::seed()));
  std::fflush(stdout);
  return boost::unit_test::unit_test_main(&init_unit_test, argc, argv);
}
