// `dptrain estimate JOB.toml`: what the job needs per device and in all (lib/estimate), from the job's
// model and data, its cluster, and step times from a layer profile (--profile), a device's peak rates
// (--device, or --peak-tflops/--bandwidth), or the blocks timed here; --fit searches the fewest devices
// of a kind the job fits on. No MPI.
#include <sys/resource.h>

#include <cstdio>
#include <fstream>

#include "apps/dptrain/commands.h"
#include "lib/core/error.h"
#include "lib/estimate/estimate.h"
#include "lib/launch/emit.h"
#include "lib/pipeline/profile.h"
#include "lib/measure/layer_profile.h"
#include "lib/measure/pipeline_plan.h"
#include "lib/measure/device.h"

namespace dp::app {
namespace {

// This process's resident size now: what a rank of the same binary holds before its data and buffers.
double resident_now() {
  std::ifstream statm("/proc/self/statm");
  double pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * double(sysconf(_SC_PAGESIZE));
}

std::optional<estimate::DeviceKind> device_of(const EstimateCommand& cmd) {
  const bool numbers = cmd.peak_tflops > 0 || cmd.bandwidth_gbps > 0 || cmd.device_memory_gb > 0;
  if (cmd.device.empty() && !numbers) return std::nullopt;
  estimate::DeviceKind d;
  if (!cmd.device.empty()) d = estimate::device_kind(cmd.device, "--device");
  else d.name = "custom";
  if (cmd.peak_tflops > 0) d.peak_tflops = cmd.peak_tflops, d.peak_tflops_bf16 = 0;
  if (cmd.bandwidth_gbps > 0) d.memory_gbps = cmd.bandwidth_gbps;
  if (cmd.device_memory_gb > 0) d.memory_gb = cmd.device_memory_gb;
  return d;
}

// Whether this machine has a GPU the job would train on.
bool gpu_here(const Job& job) {
  try {
    return choose_device(job).kind == "cuda";
  } catch (const Error&) {
    return false;
  }
}

estimate::Timing timing_of(const EstimateCommand& cmd, const Job& job, const estimate::ModelFacts& facts,
                           const std::optional<estimate::DeviceKind>& device) {
  estimate::Timing t;
  const int64_t share = std::max<int64_t>(1, job.train.global_batch / std::max<int64_t>(1, job.launch.ranks));
  const int64_t micro = job.parallel.strategy == "pipeline" ? profile_micro_batch(job) : share;
  if (cmd.no_timing) return t;
  if (!cmd.profile.empty()) {
    if (!pipeline::is_block_profile(cmd.profile))
      throw UsageError("--profile", cmd.profile + " is not a dptrain layer profile",
                       "write one with 'dptrain profile --layers JOB --out FILE' (PipeDream's graphs have no "
                       "update or fixed times)");
    t.profile = pipeline::read_block_profile(cmd.profile);
    if (t.profile->model != facts.describe)
      throw ProfileError(cmd.profile, "a profile of " + t.profile->model + ", not of " + facts.describe,
                         "profile this job's model: dptrain profile --layers JOB --out FILE");
    t.basis = "layer profile " + cmd.profile + " (" + t.profile->device + ")";
  } else if (device && (device->peak_tflops > 0 || device->memory_gbps > 0)) {
    t.profile = estimate::roofline_profile(facts, *device, job.train.precision == "bf16", micro);
    t.basis = device->name + "'s peak rates (a lower bound)";
  } else {
    if (job.train.device == "cuda" && !gpu_here(job))
      throw UsageError("--profile", "the job trains on GPUs and this machine has none to time its blocks on",
                       "give --profile FILE (profile --layers on a GPU), --device NAME (peak rates) or --no-timing");
    t.profile = measure_block_profile(job, micro, 5, 2);
    t.basis = "the blocks timed here (" + t.profile->device + ", " + std::to_string(micro) + " samples)";
  }
  return t;
}

}  // namespace

int cmd_estimate(const EstimateCommand& cmd) {
  const double baseline = resident_now();
  const Job job = load_job(cmd.job_path, cmd.overrides, cmd.cluster_file);
  for (const JobWarning& w : job.warnings) std::fprintf(stderr, "dptrain: %s\n", w.line().c_str());
  const auto device = device_of(cmd);
  if (cmd.fit && !device)
    throw UsageError("--fit", "needs a device kind", "add --device NAME (or --device-memory GB)");
  const estimate::ModelFacts facts = estimate::model_facts(job);
  const estimate::Timing timing = timing_of(cmd, job, facts, device);
  estimate::Options o;
  o.baseline_resident_bytes = baseline;
  // The ranks' device where the job runs: cuda as asked, auto as this machine resolves it.
  o.gpu = job.train.device == "cuda" || (job.train.device == "auto" && gpu_here(job));
  if (cmd.fit) o.fit_device = device;
  const estimate::Estimate e = estimate::estimate_job(job, facts, pipeline_cluster(job), timing, o);
  if (!cmd.emit.empty()) {
    SchedulerRequest q;
    q.job_name = job.job.name;
    q.job_file = cmd.job_path;
    q.job_text = job_to_toml(job);
    q.ranks = e.request.ranks, q.nodes = e.request.nodes, q.ranks_per_node = e.request.ranks_per_node;
    q.cpus_per_rank = e.request.cpus_per_rank;
    q.memory_per_rank_bytes = e.request.memory_per_rank_bytes;
    q.gpus_per_rank = e.request.gpus_per_rank;
    q.time_limit_s = e.request.time_limit_s;
    q.image = cmd.image.empty() ? default_image() : cmd.image;
    for (const std::string& s : cmd.overrides) q.run_args.push_back("--set=" + s);
    check_request(q);
    std::fputs((cmd.emit == "slurm" ? sbatch_script(q) : mpijob_manifest(q)).c_str(), stdout);
    return 0;
  }
  std::fputs((cmd.json ? estimate::estimate_json(e) : estimate::estimate_text(e)).c_str(), stdout);
  return 0;
}

}  // namespace dp::app
