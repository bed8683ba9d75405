// The synthetic dataset: deterministic from the seed, the requested shapes, labels in range, and a
// difficulty between trivial and hopeless (nearest-centroid accuracy).
#define BOOST_TEST_MODULE data_synthetic
#include <boost/test/unit_test.hpp>

#include <cstring>
#include <limits>
#include <vector>

#include "lib/core/error.h"
#include "lib/data/dataset.h"

namespace {

dp::DataSection synthetic(int64_t train = 4096, int64_t test = 1024, int64_t features = 32,
                          int64_t classes = 10) {
  dp::DataSection s;
  s.dataset = dp::DatasetKind::synthetic;
  s.train_samples = train;
  s.test_samples = test;
  s.features = features;
  s.classes = classes;
  return s;
}

bool same_bytes(const dp::Dataset& a, const dp::Dataset& b) {
  return a.count == b.count && a.features == b.features && a.x.size() == b.x.size() &&
         std::memcmp(a.x.data(), b.x.data(), a.x.size() * sizeof(float)) == 0 && a.y == b.y;
}

// Accuracy on `test` of the nearest class mean estimated from `train`.
double nearest_centroid_accuracy(const dp::Dataset& train, const dp::Dataset& test) {
  const auto f = size_t(train.features), k = size_t(train.classes);
  std::vector<double> mean(k * f, 0.0);
  std::vector<int64_t> n(k, 0);
  for (int64_t i = 0; i < train.count; ++i) {
    const auto c = size_t(train.y[size_t(i)]);
    ++n[c];
    for (size_t j = 0; j < f; ++j) mean[c * f + j] += train.x[size_t(i) * f + j];
  }
  for (size_t c = 0; c < k; ++c)
    for (size_t j = 0; j < f; ++j) mean[c * f + j] /= double(std::max<int64_t>(n[c], 1));
  int64_t right = 0;
  for (int64_t i = 0; i < test.count; ++i) {
    double best = std::numeric_limits<double>::max();
    size_t arg = 0;
    for (size_t c = 0; c < k; ++c) {
      double d = 0;
      for (size_t j = 0; j < f; ++j) {
        const double e = test.x[size_t(i) * f + j] - mean[c * f + j];
        d += e * e;
      }
      if (d < best) best = d, arg = c;
    }
    right += int64_t(arg) == test.y[size_t(i)];
  }
  return double(right) / double(test.count);
}

}  // namespace

BOOST_AUTO_TEST_CASE(shapes_and_labels) {
  const dp::DatasetSplits d = dp::load_dataset(synthetic(300, 70, 5, 3), 7);
  for (const auto* s : {&d.train, &d.test}) {
    BOOST_CHECK_EQUAL(s->name, "synthetic");
    BOOST_CHECK_EQUAL(s->features, 5);
    BOOST_CHECK_EQUAL(s->classes, 3);
    BOOST_CHECK_EQUAL(s->x.size(), size_t(s->count * 5));
    BOOST_CHECK_EQUAL(s->y.size(), size_t(s->count));
    std::vector<int> seen(3);
    for (int32_t y : s->y) {
      BOOST_REQUIRE(y >= 0 && y < 3);
      seen[size_t(y)] = 1;
    }
    BOOST_CHECK((seen == std::vector<int>{1, 1, 1}));
  }
  BOOST_CHECK_EQUAL(d.train.count, 300);
  BOOST_CHECK_EQUAL(d.test.count, 70);
}

BOOST_AUTO_TEST_CASE(deterministic_from_the_seed) {
  const auto a = dp::load_dataset(synthetic(), 42);
  const auto b = dp::load_dataset(synthetic(), 42);
  const auto c = dp::load_dataset(synthetic(), 43);
  BOOST_CHECK(same_bytes(a.train, b.train));
  BOOST_CHECK(same_bytes(a.test, b.test));
  BOOST_CHECK(!same_bytes(a.train, c.train));
  BOOST_CHECK(!same_bytes(a.test, c.test));
  // Train and test come from independent streams: the test set is not a prefix of the training set.
  BOOST_CHECK(std::memcmp(a.train.x.data(), a.test.x.data(), 32 * sizeof(float)) != 0);
  // The test split does not depend on the training split's size.
  const auto d = dp::load_dataset(synthetic(1000), 42);
  BOOST_CHECK(same_bytes(a.test, d.test));
}

BOOST_AUTO_TEST_CASE(learnable_but_not_trivial) {
  for (int64_t features : {32, 8, 128}) {
    double worst = 1, best = 0;
    for (uint64_t seed : {1, 2, 3}) {
      const auto d = dp::load_dataset(synthetic(4096, 1024, features), seed);
      const double acc = nearest_centroid_accuracy(d.train, d.test);
      BOOST_TEST_MESSAGE("features " << features << ", seed " << seed << ": nearest-centroid accuracy "
                                     << acc);
      worst = std::min(worst, acc);
      best = std::max(best, acc);
    }
    BOOST_CHECK_GT(worst, 0.5);   // chance is 0.1
    BOOST_CHECK_LT(best, 0.99);   // not trivially separable
  }
}

BOOST_AUTO_TEST_CASE(rejects_bad_sizes) {
  BOOST_CHECK_THROW(dp::load_dataset(synthetic(0), 1), dp::DataError);
  BOOST_CHECK_THROW(dp::load_dataset(synthetic(10, 0), 1), dp::DataError);
  BOOST_CHECK_THROW(dp::load_dataset(synthetic(10, 10, 0), 1), dp::DataError);
  BOOST_CHECK_THROW(dp::load_dataset(synthetic(10, 10, 4, 1), 1), dp::DataError);
}

BOOST_AUTO_TEST_CASE(gather_batch_copies_rows) {
  const auto d = dp::load_dataset(synthetic(20, 5, 3, 4), 11);
  const std::vector<uint32_t> idx = {19, 0, 7, 7};
  dp::BatchBuffer buf;
  const dp::Batch b = dp::gather_batch(d.train, idx, buf);
  BOOST_CHECK_EQUAL(b.n, 4);
  BOOST_CHECK(b.tokens == nullptr);
  for (size_t i = 0; i < idx.size(); ++i) {
    BOOST_CHECK_EQUAL(b.targets[i], d.train.y[idx[i]]);
    for (size_t j = 0; j < 3; ++j) BOOST_CHECK_EQUAL(b.x[i * 3 + j], d.train.x[idx[i] * 3 + j]);
  }
  const std::vector<uint32_t> bad = {20};
  BOOST_CHECK_THROW(dp::gather_batch(d.train, bad, buf), dp::InternalError);
}
