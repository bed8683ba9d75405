// `dptrain estimate JOB.toml`: its options, and what the job needs per device and in all (lib/estimate),
// from the job's model's shape (never built: a model of any size is sized here) and data, its cluster,
// and step times from a layer profile (--profile), a device's peak rates (--device, or
// --peak-tflops/--bandwidth), or the blocks timed here (only a model this machine can hold); --fit
// searches the fewest devices of a kind the job fits on. A device with memory (--device, --device-memory)
// is every rank's: its memory is what the rows are checked against, and the request asks for one GPU per
// rank. No MPI.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <sys/resource.h>

#include <cstdio>
#include <fstream>
#include <memory>

#include "apps/dptrain/job_options.h"
#include "apps/dptrain/timing.h"
#include "lib/core/error.h"
#include "lib/core/memory_meter.h"
#include "lib/estimate/estimate.h"
#include "lib/launch/emit.h"
#include "lib/pipeline/profile.h"
#include "lib/measure/measure.h"

namespace dp::app {
namespace {

struct EstimateCommand {
  JobArgs job;
  std::string cluster_file;  // --cluster: this cluster file's [cluster] instead of the job's
  std::string profile;       // --profile: a dptrain layer profile of the job's model (times)
  std::string device;        // --device: a known kind (times from its peak rates; --fit's kind)
  double peak_tflops = 0, bandwidth_gbps = 0, device_memory_gb = 0;  // a device given by numbers
  bool fit = false;          // --fit: the fewest devices of the kind the job fits on
  bool no_timing = false;    // --no-timing: memory only (no blocks timed here)
  bool json = false;
  std::string emit;          // --emit slurm | k8s: the scheduler's job sized from the estimate
  std::string image;         // --image: the container image of --emit k8s
};

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

int cmd_estimate(const EstimateCommand& cmd) {
  const double baseline = resident_now();
  const Job job = load_job(cmd.job.path, cmd.job.overrides, cmd.cluster_file);
  for (const JobWarning& w : job.warnings) std::fprintf(stderr, "dptrain: %s\n", w.line().c_str());
  const auto device = device_of(cmd);
  if (cmd.fit && !device)
    throw UsageError("--fit", "needs a device kind", "add --device NAME (or --device-memory GB)");
  const estimate::ModelFacts facts = estimate::model_facts(job);
  const estimate::Timing timing = step_timing(job, facts, TimingSource{cmd.profile, device, cmd.no_timing});
  estimate::Options o;
  o.baseline_resident_bytes = baseline;
  // The ranks' device where the job runs: cuda as asked, auto as this machine resolves it.
  // A device with memory is every rank's: its memory is each rank's limit, its ranks GPU ranks.
  const bool on_device = device && device->memory_gb > 0;
  o.gpu = on_device || job.train.device == DeviceRequest::cuda ||
          (job.train.device == DeviceRequest::automatic && gpu_here(job));
  if (cmd.fit) o.fit_device = device;
  const Job sized = on_device ? estimate::with_device_memory(job, device->memory_gb) : job;
  const estimate::Estimate e = estimate::estimate_job(job, facts, pipeline_cluster(sized), timing, o);
  if (!cmd.emit.empty()) {
    SchedulerRequest q;
    q.job_name = job.job.name;
    q.job_file = cmd.job.path;
    q.job_text = job_to_toml(job);
    q.ranks = e.request.ranks, q.nodes = e.request.nodes, q.ranks_per_node = e.request.ranks_per_node;
    q.cpus_per_rank = e.request.cpus_per_rank;
    q.memory_per_rank_bytes = e.request.memory_per_rank_bytes;
    q.gpus_per_rank = e.request.gpus_per_rank;
    q.time_limit_s = e.request.time_limit_s;
    q.max_restarts = job.launch.max_restarts;
    q.image = cmd.image.empty() ? default_image() : cmd.image;
    for (const std::string& s : cmd.job.overrides) q.run_args.push_back("--set=" + s);
    check_request(q);
    std::fputs((cmd.emit == "slurm" ? sbatch_script(q) : mpijob_manifest(q)).c_str(), stdout);
    return 0;
  }
  std::fputs((cmd.json ? estimate::estimate_json(e) : estimate::estimate_text(e)).c_str(), stdout);
  return 0;
}

}  // namespace

void register_estimate(CLI::App& app, Invocation& call) {
  auto opt = std::make_shared<EstimateCommand>();
  auto* cmd = app.add_subcommand("estimate", "estimate what a job needs per device (memory by term, FLOPs, step, "
                                             "epoch and job time) and in all (the fewest devices, a scheduler's "
                                             "request)");
  add_job_options(*cmd, opt->job);
  cmd->add_option("--cluster", opt->cluster_file, "estimate on this cluster file's [cluster] instead of the job's")
      ->type_name("FILE");
  cmd->add_option("--profile", opt->profile, "step times from this layer profile of the job's model "
                                             "(profile --layers --out)")->type_name("FILE");
  cmd->add_option("--device", opt->device, "every rank's device kind: times from its peak rates (a lower bound), "
                                           "its memory each rank's limit, one GPU per rank in the request, and "
                                           "--fit's kind (h200, h100, a100-80, a100-40, l40s, v100, rtx4090)")
      ->type_name("NAME");
  cmd->add_option("--peak-tflops", opt->peak_tflops, "the device's peak TFLOP/s (instead of or over --device)")
      ->check(CLI::PositiveNumber)->type_name("X");
  cmd->add_option("--bandwidth", opt->bandwidth_gbps, "the device's memory bandwidth in GB/s")
      ->check(CLI::PositiveNumber)->type_name("GBPS");
  cmd->add_option("--device-memory", opt->device_memory_gb, "the device's memory in GB")
      ->check(CLI::PositiveNumber)->type_name("GB");
  cmd->add_flag("--fit", opt->fit, "also find the fewest devices of the kind on which every rank fits");
  cmd->add_flag("--no-timing", opt->no_timing, "memory only: time nothing (without --profile or --device the "
                                               "blocks are timed here)");
  cmd->add_flag("--json", opt->json, "print the estimate as one JSON object");
  cmd->add_option("--emit", opt->emit, "print instead an sbatch script (slurm) or a Kubeflow MPIJob manifest (k8s) "
                                       "sized from the estimate")
      ->check(CLI::IsMember({"slurm", "k8s"}))->type_name("slurm|k8s");
  cmd->add_option("--image", opt->image, "--emit k8s: the container image (default localhost/dptrain:VERSION)")
      ->type_name("IMAGE");
  cmd->callback([opt, &call] { call.status = cmd_estimate(*opt); });
}

}  // namespace dp::app
