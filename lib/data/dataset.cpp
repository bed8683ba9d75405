// load_dataset's dispatch on [data] dataset, and gather_batch.
#include "lib/data/dataset.h"

#include <cstring>

#include <fmt/format.h>

#include <stdexcept>

#include "lib/core/error.h"
#include "lib/data/loaders.h"

namespace dp {

DatasetSplits load_dataset(const DataSection& data, uint64_t seed) {
  switch (data.dataset) {
    case DatasetKind::fashion_mnist: return load_fashion_mnist(data.path);
    case DatasetKind::synthetic: return make_synthetic(data, seed);
    case DatasetKind::text: return load_text(data);
  }
  throw std::logic_error("load_dataset: a DatasetKind without a case");
}

Batch gather_batch(const Dataset& d, std::span<const uint32_t> indices, BatchBuffer& buf) {
  const size_t n = indices.size();
  for (const uint32_t k : indices)
    DP_CHECK(int64_t(k) < d.count, fmt::format("sample index {} of {} samples", k, d.count));
  if (d.context > 0) {
    const size_t t = size_t(d.context);
    buf.tokens.resize(n * t);
    buf.targets.resize(n * t);
    for (size_t i = 0; i < n; ++i) {
      const int32_t* window = d.text.data() + size_t(indices[i]) * t;
      std::memcpy(buf.tokens.data() + i * t, window, t * sizeof(int32_t));
      std::memcpy(buf.targets.data() + i * t, window + 1, t * sizeof(int32_t));
    }
    return {int64_t(n), nullptr, buf.tokens.data(), buf.targets.data()};
  }
  const size_t row = size_t(d.features);
  buf.x.resize(n * row);
  buf.targets.resize(n);
  for (size_t i = 0; i < n; ++i) {
    std::memcpy(buf.x.data() + i * row, d.x.data() + size_t(indices[i]) * row, row * sizeof(float));
    buf.targets[i] = d.y[indices[i]];
  }
  return {int64_t(n), buf.x.data(), nullptr, buf.targets.data()};
}

}  // namespace dp
