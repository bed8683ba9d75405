// summarize (summary.h).
#include "lib/sim/summary.h"

#include <algorithm>
#include <numeric>

namespace dp::sim {

void summarize(Result& r, double samples) {
  if (r.step_s.empty()) return;
  std::vector<double> sorted = r.step_s;
  const size_t mid = sorted.size() / 2;
  std::nth_element(sorted.begin(), sorted.begin() + long(mid), sorted.end());
  r.median_step_s = sorted[mid];
  const double total = std::accumulate(r.step_s.begin(), r.step_s.end(), 0.0);
  r.mean_step_s = total / double(r.step_s.size());
  r.samples_per_s = total > 0 ? samples / total : 0;
}

}  // namespace dp::sim
