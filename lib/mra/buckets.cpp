// MRA's bucket plan: layers grouped from the end of the parameter buffer to its start; the options a
// job's [parallel.comm] sets.
#include <algorithm>

#include <fmt/format.h>

#include "lib/core/error.h"
#include "lib/mra/mra.h"

namespace dp {

std::vector<ParamRange> plan_buckets(const std::vector<ParamRange>& layers, int64_t total, int64_t bucket_bytes,
                                     int64_t first_bucket_bytes) {
  DP_CHECK(bucket_bytes > 0 && first_bucket_bytes > 0, "bucket sizes must be positive");
  int64_t expected = 0;
  for (const ParamRange& l : layers) {
    if (l.count == 0) continue;
    DP_CHECK(l.offset == expected, fmt::format("layer ranges must tile the buffer: {} where {} was expected",
                                               l.offset, expected));
    expected = l.end();
  }
  DP_CHECK(expected == total, fmt::format("layers cover {} of {} parameters", expected, total));

  // The last bucket (the first ranges) is as small as the first: its reduce-scatter ends the step and its
  // all-gather starts the next, with no computation left to hide them.
  const int64_t first_target = first_bucket_bytes / int64_t(sizeof(float));
  int64_t tail_end = 0;
  for (const ParamRange& l : layers) {
    tail_end = l.end();
    if (tail_end >= first_target) break;
  }

  std::vector<ParamRange> buckets;
  int64_t end = total;  // the open bucket is [begin, end)
  int64_t target = first_target;
  for (size_t i = layers.size(); i-- > 0;) {
    const ParamRange& l = layers[i];
    if (l.count == 0) continue;
    if (end - l.offset >= target || l.offset == 0 || l.offset == tail_end) {
      buckets.push_back({l.offset, end - l.offset});
      end = l.offset;
      target = bucket_bytes / int64_t(sizeof(float));
    }
  }
  return buckets;
}

GradSyncOptions grad_sync_options(const CommSection& c) {
  GradSyncOptions o;
  o.algorithm = c.algorithm;
  o.bucket_bytes = int64_t(c.bucket_mb * 1e6);
  o.first_bucket_bytes = int64_t(c.first_bucket_mb * 1e6);
  o.overlap = c.overlap;
  o.overlap_forward = c.overlap_forward;
  o.sharded_update = c.sharded_update;
  return o;
}

int64_t hook_slice_floats(const GradSyncOptions& options) {
  if (options.algorithm != CommAlgorithm::mra || !options.overlap) return 0;
  return std::max<int64_t>(1, options.first_bucket_bytes / int64_t(sizeof(float)));
}

}  // namespace dp
