// `dptrain plan` for [parallel] strategy = "cgp": the cluster (the job's, or --workers ranks drawn from
// its device kinds) and the workload CGP's model reads (the model's update size; seconds per sample at
// speed 1 from [cluster] sample_rate, or timed here), then lib/cgp's groupings and report
// (lib/cgp/plan_report.h). --json prints the same as one JSON object.
#include <algorithm>
#include <cstdio>

#include "apps/dptrain/plan.h"
#include "lib/cgp/plan_report.h"
#include "lib/cluster/cluster.h"
#include "lib/comm/thread_communicator.h"
#include "lib/data/dataset.h"
#include "lib/measure/measure.h"
#include "models/model_shape.h"

namespace dp::app {
namespace {

// Seconds per sample of forward+backward of the job's model on `samples` samples, timed on this
// machine's CPU (CGP's ranks are CPU ranks) unslowed by [cluster.emulate]: a device of speed 1. The
// median of 3 steps after one.
double time_sample_seconds(const Job& job, int64_t samples) {
  Job probe = job;
  probe.cluster.emulate = EmulateSection{};
  probe.train.device = DeviceRequest::cpu;
  SpeedProbe p;
  run_thread_ranks(1, [&](Communicator& alone) { p = measure_compute_speed(probe, alone, 3, 1, samples); });
  return 1.0 / p.samples_per_second;
}

cgp::PlanReport plan_inputs(const PlanCommand& cmd, const Job& job) {
  const DatasetSplits data = load_dataset(job.data, job.job.seed);
  const ModelShape model = model_shape(job.model, data.train.shape());  // not built
  const uint64_t seed = cmd.seed_given ? cmd.seed : job.job.seed;
  const bool drawn = cmd.workers > 0;
  Cluster cluster = drawn ? draw_cluster(job, int(cmd.workers), seed) : cluster_from_job(job);
  const bool rated = job.cluster.sample_rate > 0;
  const int64_t parameters = model.parameters;
  const int64_t timed = std::clamp<int64_t>(job.train.global_batch, 1, std::min<int64_t>(32, data.train.count));
  cgp::PlanReport r{job.job.name, std::move(cluster),
                    cgp::job_workload(job, parameters,
                                      rated ? 1.0 / job.cluster.sample_rate : time_sample_seconds(job, timed)),
                    model.describe, rated ? "[cluster] sample_rate" : "timed on this machine", parameters, seed,
                    drawn, job.parallel.cgp.max_staleness, job.parallel.cgp.group_count, {}, {}, {}};
  // Drawn ranks keep the job's share per rank: the global batch scales with them.
  if (drawn) r.workload.global_batch = std::max<int64_t>(1, job.train.global_batch * cmd.workers / job.launch.ranks);
  return r;
}

}  // namespace

int plan_cgp(const PlanCommand& cmd, const Job& job) {
  cgp::PlanReport r = plan_inputs(cmd, job);
  cgp::solve_plan(job, r);
  std::fputs((cmd.json ? cgp::plan_json(r) : cgp::plan_text(r)).c_str(), stdout);
  return 0;
}

}  // namespace dp::app
