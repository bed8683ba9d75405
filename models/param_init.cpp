// Initial parameter values, tensor by tensor (param_init.h).
#include "models/param_init.h"

#include <algorithm>

#include "lib/core/rng.h"

namespace dp {
namespace {

// Element i of the tensor's stream is its i-th draw: the whole tensor up to the last element wanted is
// drawn, so a range of it has the values it has in the whole.
void draw(const TensorInit& t, int64_t from, int64_t to, float* out) {
  Rng rng(t.seed);
  for (int64_t i = 0; i < to; ++i) {
    const double v = t.kind == TensorInit::Kind::normal ? rng.normal() * t.value : (2.0 * rng.uniform() - 1.0) * t.value;
    if (i >= from) out[i - from] = float(v);
  }
}

}  // namespace

void fill_initial(std::span<const TensorInit> tensors, int64_t begin, std::span<float> out) {
  std::fill(out.begin(), out.end(), 0.0f);
  const int64_t end = begin + int64_t(out.size());
  for (const TensorInit& t : tensors) {
    const int64_t lo = std::max(begin, t.offset), hi = std::min(end, t.offset + t.count);
    if (lo >= hi) continue;
    float* at = out.data() + (lo - begin);
    if (t.kind == TensorInit::Kind::constant) std::fill_n(at, hi - lo, float(t.value));
    else draw(t, lo - t.offset, hi - t.offset, at);
  }
}

}  // namespace dp
