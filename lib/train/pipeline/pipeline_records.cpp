// The pipeline line of a phase (pipeline_records.h).
#include "lib/train/pipeline/pipeline_records.h"

#include <algorithm>
#include <cmath>

#include "lib/cluster/cluster.h"

namespace dp::pipeline_detail {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

std::optional<Cluster> with_resumed_speeds(const Cluster& c, const std::vector<double>& speeds) {
  if (speeds.size() != size_t(c.size()) ||
      std::any_of(speeds.begin(), speeds.end(), [](double s) { return !(s > 0) || !std::isfinite(s); }))
    return std::nullopt;
  const std::vector<double> now = c.speeds();
  double total_now = 0, total_then = 0;
  for (size_t r = 0; r < now.size(); ++r) total_now += now[r], total_then += speeds[r];
  std::vector<double> scaled(speeds.size());
  for (size_t r = 0; r < speeds.size(); ++r) scaled[r] = speeds[r] * (total_now / total_then);
  return c.with_speeds(scaled);
}

std::vector<double> described_speeds(const Job& job) {
  std::vector<double> speeds = cluster_from_job(job).speeds();
  if (!job.parallel.pipeline.profile.empty() || speeds.empty()) return speeds;
  const double here = job.cluster.emulate.as_described ? *std::max_element(speeds.begin(), speeds.end())
                                                       : speeds.front();
  for (double& s : speeds) s /= here;
  return speeds;
}

std::vector<double> expected_compute_ms_per_sample(const pipeline::Plan& plan, const pipeline::Prediction& prediction,
                                                   const pipeline::Workload& w, const std::vector<double>& speeds) {
  std::vector<double> out(speeds.size(), 0.0);
  for (size_t s = 0; s < plan.stages.size() && s < prediction.stages.size(); ++s) {
    const pipeline::Stage& st = plan.stages[s];
    double per_sample = 0, fixed = 0;  // seconds on a device of speed 1
    for (int b = st.first; b <= st.last; ++b) {
      const pipeline::BlockCost& c = w.blocks[size_t(b)];
      per_sample += c.forward_s + c.backward_s;
      fixed += c.forward_fixed_s + c.backward_fixed_s;
    }
    for (int b : st.recompute) {
      per_sample += w.blocks[size_t(b)].forward_s;
      fixed += w.blocks[size_t(b)].forward_fixed_s;
    }
    const std::vector<int64_t>& shares = prediction.stages[s].shares;
    for (size_t i = 0; i < st.ranks.size() && i < shares.size(); ++i) {
      const size_t r = size_t(st.ranks[i]);
      if (r < out.size() && shares[i] > 0 && speeds[r] > 0)
        out[r] = (per_sample + fixed / double(shares[i])) / speeds[r] * 1e3;
    }
  }
  return out;
}

PipelineLine phase_line(const pipeline::Plan& plan, int64_t micro_batches, const pipeline::Prediction* prediction,
                        int64_t step, const std::vector<double>& step_ms,
                        const std::vector<std::vector<RankRecord>>& records, const std::vector<double>& peaks,
                        const std::vector<double>& expected_ms_per_sample) {
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
    // The stage's slowest replica; every replica's compute per sample, and the plan's expectation of it.
    for (int r : st.ranks) {
      std::vector<double> compute, wait, per_sample;
      for (const auto& all : records) {
        const StepTimes& t = all[size_t(r)].times;
        compute.push_back(t.compute_ms);
        wait.push_back(t.wait_ms);
        if (t.local_batch > 0) per_sample.push_back(t.compute_ms / double(t.local_batch));
      }
      sl.measured_compute_ms = std::max(sl.measured_compute_ms, median(compute));
      sl.measured_wait_ms = std::max(sl.measured_wait_ms, median(wait));
      sl.measured_peak_bytes.push_back(peaks[size_t(r)]);
      sl.measured_ms_per_sample.push_back(median(per_sample));
      if (size_t(r) < expected_ms_per_sample.size())
        sl.expected_ms_per_sample.push_back(expected_ms_per_sample[size_t(r)]);
    }
    if (sl.expected_ms_per_sample.size() != st.ranks.size()) sl.expected_ms_per_sample.clear();
    busy += sl.measured_compute_ms;
    line.stages.push_back(std::move(sl));
  }
  line.measured_bubble = 1 - busy / double(plan.stages.size()) / line.measured_minibatch_ms;
  return line;
}

}  // namespace dp::pipeline_detail
