// The pipeline line of a phase (pipeline_records.h).
#include "lib/train/pipeline_records.h"

#include <algorithm>

namespace dp::pipeline_detail {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

PipelineLine phase_line(const pipeline::Plan& plan, int64_t micro_batches, const pipeline::Prediction* prediction,
                        int64_t step, const std::vector<double>& step_ms,
                        const std::vector<std::vector<RankRecord>>& records, const std::vector<double>& peaks) {
  PipelineLine line;
  line.step = step;
  line.minibatches = int64_t(step_ms.size());
  line.measured_minibatch_ms = median(step_ms);
  if (prediction) {
    line.predicted_minibatch_ms = prediction->minibatch_s * 1e3;
    line.predicted_bubble = prediction->bubble_fraction;
  }
  double busy = 0;
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const pipeline::Stage& st = plan.stages[s];
    PipelineLine::StageLine sl;
    sl.stage = int(s);
    sl.first = st.first;
    sl.last = st.last;
    sl.ranks = st.ranks;
    sl.recompute = st.recompute;
    if (prediction) {
      const pipeline::StagePrediction& sp = prediction->stages[s];
      sl.predicted_compute_ms = double(micro_batches) * (sp.forward_s + sp.backward_s) * 1e3;
      sl.predicted_peak_bytes = sp.peak_bytes;
    }
    // The stage's slowest replica.
    for (int r : st.ranks) {
      std::vector<double> compute, wait;
      for (const auto& all : records) {
        compute.push_back(all[size_t(r)].times.compute_ms);
        wait.push_back(all[size_t(r)].times.wait_ms);
      }
      sl.measured_compute_ms = std::max(sl.measured_compute_ms, median(compute));
      sl.measured_wait_ms = std::max(sl.measured_wait_ms, median(wait));
      sl.measured_peak_bytes.push_back(peaks[size_t(r)]);
    }
    busy += sl.measured_compute_ms;
    line.stages.push_back(std::move(sl));
  }
  line.measured_bubble = 1 - busy / double(plan.stages.size()) / line.measured_minibatch_ms;
  return line;
}

}  // namespace dp::pipeline_detail
