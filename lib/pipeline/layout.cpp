// The layout of a mini-batch over a pipeline's stages and replicas (layout.h).
#include "lib/pipeline/layout.h"

#include <algorithm>

#include "lib/balance/balance.h"
#include "lib/core/error.h"

namespace dp::pipeline {

std::vector<Rows> micro_batch_rows(int64_t batch, int64_t micro_batches) {
  DP_CHECK(batch >= 1 && micro_batches >= 1, "a mini-batch of rows and a micro-batch count");
  const int64_t m = std::min(batch, micro_batches), base = batch / m, longer = batch % m;
  std::vector<Rows> out;
  int64_t at = 0;
  for (int64_t i = 0; i < m; ++i) {
    const int64_t count = base + (i < longer ? 1 : 0);
    out.push_back({at, count});
    at += count;
  }
  return out;
}

std::vector<Rows> replica_rows(int64_t n, const std::vector<int64_t>& weights) {
  DP_CHECK(!weights.empty() && n >= 0, "replicas and rows");
  std::vector<int64_t> counts;
  if (weights.size() == 1) {
    counts = {n};
  } else if (n > 0) {
    const std::vector<double> w(weights.begin(), weights.end());
    counts = divide_batch(n, w, 0);
  } else {
    counts.assign(weights.size(), 0);
  }
  std::vector<Rows> out;
  int64_t at = 0;
  for (int64_t c : counts) {
    out.push_back({at, c});
    at += c;
  }
  return out;
}

std::vector<Piece> boundary_pieces(const std::vector<Rows>& from, const std::vector<Rows>& to) {
  std::vector<Piece> out;
  for (size_t i = 0; i < from.size(); ++i)
    for (size_t j = 0; j < to.size(); ++j) {
      const int64_t begin = std::max(from[i].begin, to[j].begin), end = std::min(from[i].end(), to[j].end());
      if (end > begin) out.push_back({int(i), int(j), {begin, end - begin}});
    }
  std::sort(out.begin(), out.end(), [](const Piece& a, const Piece& b) { return a.rows.begin < b.rows.begin; });
  return out;
}

}  // namespace dp::pipeline
