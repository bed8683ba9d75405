// `dptrain profile`'s measurements (profile.h): on the ranks of a launch, each rank's compute speed
// (--compute), the links between every pair (--links) and the collectives sweep (--collectives,
// lib/comm/collective_sweep.h); in this process, every block of the job's model (--layers).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <optional>

#include "apps/dptrain/profile.h"
#include "lib/comm/collective_sweep.h"
#include "lib/comm/communicator.h"
#include "lib/comm/link_probe.h"
#include "lib/core/json.h"
#include "lib/estimate/estimate.h"
#include "lib/measure/measure.h"
#include "lib/train/train.h"

namespace dp::app {
namespace {

void profile_compute(const ProfileCommand& cmd, Communicator& world) {
  const Job job = load_job(cmd.job.path, cmd.job.overrides);
  const SpeedProbe mine = measure_compute_speed(job, world, cmd.compute_steps, 3);
  const auto all = world.allgather_value(mine);
  if (world.rank() != 0) return;
  double fastest = 0;
  for (const SpeedProbe& p : all) fastest = std::max(fastest, p.samples_per_second);
  if (!cmd.json)
    std::printf("# dptrain profile --compute: %s, forward+backward of an equal share of the global batch (%lld), "
                "median of %d steps%s\n#%5s %8s %12s %10s %12s %9s\n", name_of(job.model.type).c_str(),
                (long long)job.train.global_batch, cmd.compute_steps, mine.cuda ? ", on the GPUs (CUDA kernels)" : "",
                "rank", "threads", "local batch", "step ms", "samples/s", "relative");
  std::string speeds;
  for (size_t r = 0; r < all.size(); ++r) {
    const SpeedProbe& p = all[r];
    const double rel = fastest > 0 ? p.samples_per_second / fastest : 0;
    speeds += fmt::format("{}{:.3g}", r ? ", " : "", rel);
    if (cmd.json)
      std::printf(R"({"measure": "compute", "rank": %zu, "device": "%s", "threads": %d, "local_batch": %lld, )"
                  R"("step_ms": %.4f, "samples_per_sec": %.2f, "relative": %.4f})" "\n",
                  r, p.cuda ? "cuda" : "cpu", p.threads, (long long)p.local_batch, p.step_ms, p.samples_per_second,
                  rel);
    else
      std::printf(" %5zu %8d %12lld %10.3f %12.1f %9.3f\n", r, p.threads, (long long)p.local_batch, p.step_ms,
                  p.samples_per_second, rel);
  }
  if (!cmd.json) std::printf("# for I-DAT's first division:\n[parallel.balance]\nspeeds = [%s]\n", speeds.c_str());
  std::fflush(stdout);
}

// Every pair's link, one pair at a time; rank 0 prints the matrices (or JSON lines) and writes --out.
void profile_links(const ProfileCommand& cmd, const Job& job, Communicator& world, bool paced) {
  const LinkProbeConfig config;
  const LinkProbeResult r = probe_links(world, config);
  std::array<char, 64> host{};  // each rank's node, for the cluster file's node_sizes
  std::strncpy(host.data(), world.host().c_str(), host.size() - 1);
  std::vector<std::string> hosts;
  for (const auto& h : world.allgather_value(host)) hosts.emplace_back(h.data());
  if (world.rank() != 0) return;
  const std::string network = paced ? links_text(job) : "no emulated links";
  if (cmd.json) {
    std::printf("%s", link_json_lines(r).c_str());
  } else {
    std::printf("# dptrain profile --links: %d rank(s), host %s, %s\n", r.ranks, world.host().c_str(),
                network.c_str());
    std::printf("# one pair at a time: latency = half the median round trip of %zu B (%d times), bandwidth = "
                "%zu B / (one-way time - latency) (median of %d)\n", config.latency_bytes,
                config.latency_repetitions, config.bandwidth_bytes, config.bandwidth_repetitions);
    std::printf("%s", link_matrices_text(r).c_str());
  }
  if (!cmd.links_out.empty()) {
    write_file_atomic(cmd.links_out,
                      link_cluster_file(r, {fmt::format("Links measured by `dptrain profile --links` on {} rank(s) "
                                                        "({}), host {}, {}.", r.ranks, job.source, world.host(),
                                                        network),
                                            "Row-major ranks x ranks (row: from, column: to). A job of as many ranks "
                                            "reads it with",
                                            "[cluster] file = \"PATH\" (PATH relative to the job file's folder)."},
                                         hosts));
    const bool nodes = std::any_of(hosts.begin(), hosts.end(), [&](const std::string& h) { return h != hosts[0]; });
    if (!cmd.json)
      std::printf("# wrote %s ([cluster.links] gbps and latency_us%s)\n", cmd.links_out.c_str(),
                  nodes ? "; [cluster] node_sizes where each node's ranks are consecutive" : "");
  }
  std::fflush(stdout);
}

}  // namespace

int profile_rank(const ProfileCommand& cmd, ProcessArgs process) {
  MpiRuntime mpi(process.argc, process.argv);
  auto launched = mpi_world();
  // With a job, its [cluster.emulate] links pace what is measured.
  const std::optional<Job> job =
      cmd.job.path.empty() ? std::nullopt : std::optional<Job>(load_job(cmd.job.path, cmd.job.overrides));
  const auto paced = job ? paced_by_job_links(*job, *launched) : nullptr;
  Communicator* world = paced ? paced.get() : launched.get();
  if (cmd.compute) profile_compute(cmd, *world);
  if (cmd.links) profile_links(cmd, *job, *world, paced != nullptr);
  if (!cmd.collectives) return 0;
  CollectiveSweep sweep;
  sweep.algorithms = cmd.algorithms;
  sweep.min_bytes = cmd.min_bytes, sweep.max_bytes = cmd.max_bytes, sweep.factor = cmd.factor;
  sweep.iterations = cmd.iterations, sweep.warmup = cmd.warmup;
  sweep.json = cmd.json;
  if (paced) sweep.links = links_text(*job);
  return sweep_allreduce(*world, sweep, stdout) == 0 ? 0 : 1;
}

// Every block timed in this process, or (--device) its times at a device kind's peak rates from the
// model's shape alone (never built: a model of any size); as a table, and with --out as a layer profile
// for `plan --profile` and `estimate --profile`.
int profile_layers(const ProfileCommand& cmd) {
  const Job job = load_job(cmd.job.path, cmd.job.overrides);
  const int64_t batch = cmd.layers_batch > 0 ? cmd.layers_batch
                                             : std::max<int64_t>(1, job.train.global_batch / job.launch.ranks);
  const bool rated = !cmd.device.empty();
  const pipeline::BlockProfile p =
      rated ? estimate::roofline_profile(estimate::model_facts(job), estimate::device_kind(cmd.device, "--device"),
                                         job.train.precision == Precision::bf16, batch)
            : measure_block_profile(job, batch, cmd.compute_steps, 3);
  if (cmd.json) {
    for (size_t i = 0; i < p.blocks.size(); ++i) {
      const pipeline::BlockRow& b = p.blocks[i];
      std::printf(R"({"measure": "layers", "block": %zu, "name": %s, "micro_batch": %lld, "forward_ms": %.6g, )"
                  R"("backward_ms": %.6g, "forward_fixed_ms": %.6g, "backward_fixed_ms": %.6g, "update_ms": %.6g, )"
                  R"("output_bytes": %.9g, "saved_bytes": %.9g, "work_bytes": %.9g, "param_bytes": %.9g})" "\n",
                  i, json_quoted(b.name).c_str(), (long long)p.micro_batch, b.forward_ms, b.backward_ms,
                  b.forward_fixed_ms, b.backward_fixed_ms, b.update_ms, b.output_bytes, b.saved_bytes, b.work_bytes,
                  b.param_bytes);
    }
    if (p.step_extra_ms > 0)
      std::printf(R"({"measure": "layers", "step_extra_ms": %.6g, "step_extra_fixed_ms": %.6g})" "\n",
                  p.step_extra_ms, p.step_extra_fixed_ms);
    if (p.timed_resting > 1)
      std::printf(R"({"measure": "layers", "timed_resting": %.6g, "rest_scale": %.6g})" "\n", p.timed_resting,
                  p.rest_scale);
  } else {
    if (rated)
      std::printf("# dptrain profile --layers: %s on %s, micro-batch %lld, from the device's peak rates (a roofline:\n"
                  "# a lower bound; the model was not built); fixed: the part of a time any micro-batch pays (its\n"
                  "# weights read); update: the optimizer's on the block's parameters\n",
                  p.model.c_str(), p.device.c_str(), (long long)p.micro_batch);
    else
      std::printf("# dptrain profile --layers: %s on %s, micro-batch %lld, median of %d steps; fixed: the part of a\n"
                  "# time any micro-batch pays (from timings at an eighth and four times the micro-batch); update:\n"
                  "# the optimizer's on the block's parameters\n",
                  p.model.c_str(), p.device.c_str(), (long long)p.micro_batch, cmd.compute_steps);
    if (p.timed_resting > 1)
      std::printf("# every time x%.3g: a whole step resting as the job's ranks emulated at %.3gx rest after each,\n"
                  "# against back to back ([cluster.emulate]: the fastest rank's factor)\n", p.rest_scale,
                  p.timed_resting);
    std::printf("#%5s %-18s %10s %10s %10s %10s %10s %14s %14s %12s %12s\n", "block", "name",
                "fwd ms", "bwd ms", "fwd fixed", "bwd fixed", "update ms", "out B/sample", "saved B/sample",
                "work B/smp", "param B");
    for (size_t i = 0; i < p.blocks.size(); ++i) {
      const pipeline::BlockRow& b = p.blocks[i];
      std::printf(" %5zu %-18s %10.4f %10.4f %10.4f %10.4f %10.4f %14.0f %14.0f %12.0f %12.0f\n", i, b.name.c_str(),
                  b.forward_ms, b.backward_ms, b.forward_fixed_ms, b.backward_fixed_ms, b.update_ms, b.output_bytes,
                  b.saved_bytes, b.work_bytes, b.param_bytes);
    }
    if (p.step_extra_ms > 0)
      std::printf("# a whole step besides the blocks (the batch gathered, the model's own work): %.4f ms, fixed %.4f\n",
                  p.step_extra_ms, p.step_extra_fixed_ms);
  }
  if (!cmd.links_out.empty()) {
    pipeline::write_block_profile(cmd.links_out, p);
    if (!cmd.json) std::printf("# wrote %s (for dptrain plan JOB.toml --profile %s)\n", cmd.links_out.c_str(),
                               cmd.links_out.c_str());
  }
  return 0;
}

}  // namespace dp::app
