// The "synthetic" dataset: Gaussian clusters around per-class centroids, deterministic from the seed, so
// tests and benchmarks run anywhere without data files.
#include <cmath>

#include <fmt/format.h>

#include "lib/core/error.h"
#include "lib/core/rng.h"
#include "lib/data/loaders.h"

namespace dp {
namespace {

// Stream tags for derive_seed: centroids, training samples, test samples.
constexpr uint64_t kSyntheticTag = 0x53594E5448ull;  // "SYNTH"
constexpr uint64_t kCentroidStream = 0, kTrainStream = 1, kTestStream = 2;
// Noise per feature, in units of sqrt(features): centroids drawn N(0, 1) per feature lie about
// sqrt(2 * features) apart, so the class overlap (and the best achievable accuracy) does not depend on
// the feature count. 0.35 leaves nearest-centroid accuracy near 90% with 10 classes: learnable, not trivial.
constexpr double kNoisePerSqrtFeature = 0.35;

Dataset draw_split(const std::vector<double>& centroids, int64_t count, int64_t features, int64_t classes,
                   uint64_t seed) {
  Dataset d;
  d.name = "synthetic";
  d.count = count;
  d.features = features;
  d.classes = classes;
  d.x.resize(size_t(count * features));
  d.y.resize(size_t(count));
  const double sigma = synthetic_sigma(features);
  Rng rng(seed);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t label = int64_t(rng.below(uint64_t(classes)));
    d.y[size_t(i)] = int32_t(label);
    const double* c = &centroids[size_t(label * features)];
    float* x = &d.x[size_t(i * features)];
    for (int64_t j = 0; j < features; ++j) x[j] = float(c[j] + sigma * rng.normal());
  }
  return d;
}

}  // namespace

double synthetic_sigma(int64_t features) { return kNoisePerSqrtFeature * std::sqrt(double(features)); }

DatasetSplits make_synthetic(const DataSection& data, uint64_t seed) {
  const auto check = [](bool ok, const std::string& what) {
    if (!ok) throw DataError("[data]", what, "fix the synthetic dataset's sizes in the job file");
  };
  constexpr int64_t kMaxSamples = int64_t(UINT32_MAX);  // sample indices are uint32
  check(data.train_samples >= 1 && data.train_samples <= kMaxSamples,
        fmt::format("train_samples = {} is not in [1, {}]", data.train_samples, kMaxSamples));
  check(data.test_samples >= 1 && data.test_samples <= kMaxSamples,
        fmt::format("test_samples = {} is not in [1, {}]", data.test_samples, kMaxSamples));
  check(data.features >= 1, fmt::format("features = {} must be at least 1", data.features));
  check(data.classes >= 2 && data.classes <= INT32_MAX,
        fmt::format("classes = {} must be at least 2", data.classes));

  std::vector<double> centroids(size_t(data.classes * data.features));
  Rng rng(derive_seed(seed, kSyntheticTag, kCentroidStream));
  for (auto& c : centroids) c = rng.normal();

  DatasetSplits s;
  s.train = draw_split(centroids, data.train_samples, data.features, data.classes,
                       derive_seed(seed, kSyntheticTag, kTrainStream));
  s.test = draw_split(centroids, data.test_samples, data.features, data.classes,
                      derive_seed(seed, kSyntheticTag, kTestStream));
  return s;
}

}  // namespace dp
