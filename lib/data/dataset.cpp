// load_dataset's dispatch on [data] dataset, and gather_batch.
#include "lib/data/dataset.h"

#include <cstring>

#include <fmt/format.h>

#include "lib/core/error.h"
#include "lib/data/loaders.h"

namespace dp {

DatasetSplits load_dataset(const DataSection& data, uint64_t seed) {
  if (data.dataset == "fashion-mnist") return load_fashion_mnist(data.path);
  if (data.dataset == "synthetic") return make_synthetic(data, seed);
  throw DataError("[data]", fmt::format("unknown dataset \"{}\"", data.dataset),
                  "use dataset = \"fashion-mnist\" or \"synthetic\"");
}

void gather_batch(const Dataset& d, std::span<const uint32_t> indices, float* x, int32_t* y) {
  const size_t row = size_t(d.features);
  for (size_t i = 0; i < indices.size(); ++i) {
    const uint32_t k = indices[i];
    DP_CHECK(int64_t(k) < d.count, fmt::format("sample index {} of {} samples", k, d.count));
    std::memcpy(x + i * row, d.x.data() + size_t(k) * row, row * sizeof(float));
    y[i] = d.y[k];
  }
}

}  // namespace dp
