// `dptrain profile`: its options, the checks of their combinations, and where it runs: --layers in this
// process, the other measurements on the ranks of a launch (profile_measure.cpp), relaunching itself
// under mpirun like `run` when outside an MPI job.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "apps/dptrain/job_options.h"
#include "apps/dptrain/launch_self.h"
#include "apps/dptrain/profile.h"
#include "lib/comm/collectives.h"
#include "lib/core/error.h"
#include "lib/job/job.h"
#include "lib/launch/launcher.h"

namespace dp::app {
namespace {

LaunchSection launch_of(const ProfileCommand& cmd) {
  LaunchSection launch;
  if (!cmd.job.path.empty()) {
    const Job job = load_job(cmd.job.path, cmd.job.overrides);
    for (const JobWarning& w : job.warnings) std::fprintf(stderr, "dptrain: %s\n", w.line().c_str());
    launch = job.launch;
  }
  if (cmd.ranks > 0) launch.ranks = cmd.ranks;
  launch.ranks_given = launch.ranks_given || cmd.ranks > 0;
  return launch;
}

void check(const ProfileCommand& cmd) {
  if (!cmd.collectives && !cmd.compute && !cmd.links && !cmd.layers)
    throw UsageError("profile", "nothing to profile",
                     "give --compute JOB.toml, --links JOB.toml, --layers JOB.toml and/or --collectives");
  if (cmd.layers && (cmd.collectives || cmd.compute || cmd.links))
    throw UsageError("profile --layers", "runs in this process, not with --compute, --links or --collectives",
                     "profile the layers on their own");
  if (cmd.layers && cmd.job.path.empty())
    throw UsageError("profile --layers", "needs a job file (its model is what is timed)",
                     "dptrain profile --layers JOB.toml");
  if (cmd.layers_batch > 0 && !cmd.layers)
    throw UsageError("profile --batch", "is the micro-batch of --layers", "add --layers");
  if (!cmd.device.empty() && !cmd.layers)
    throw UsageError("profile --device", "gives --layers's times from a device kind's peak rates", "add --layers");
  if (cmd.compute && cmd.job.path.empty())
    throw UsageError("profile --compute", "needs a job file (its model and data are what is timed)",
                     "dptrain profile --compute JOB.toml");
  if (cmd.links && cmd.job.path.empty())
    throw UsageError("profile --links", "needs a job file (its [launch] ranks and [cluster.emulate] links are "
                     "what is measured)", "dptrain profile --links JOB.toml");
  if (!cmd.links_out.empty() && !cmd.links && !cmd.layers)
    throw UsageError("profile --out", "writes the measurements of --links or --layers", "add --links or --layers");
  if (!cmd.links_out.empty()) {
    const std::filesystem::path dir = std::filesystem::path(cmd.links_out).parent_path();
    std::error_code ec;
    if (!dir.empty() && !std::filesystem::is_directory(dir, ec))
      throw UsageError("profile --out", fmt::format("{}: the folder {} does not exist", cmd.links_out, dir.string()),
                       "create it first, or write the file elsewhere");
  }
  if (!cmd.job.path.empty()) {  // bad job files fail here, before mpirun
    const Job job = load_job(cmd.job.path, cmd.job.overrides);
    if (cmd.compute) (void)choose_device(job);  // device = "cuda" without a GPU, as `run` says
    if (job.cluster.emulate.as_described && cmd.ranks > 0 && cmd.ranks != job.launch.ranks)
      throw UsageError("profile --ranks", fmt::format("{} ranks, but the job's [cluster] describes {} (its "
                                                      "[cluster.emulate] as_described emulates them)",
                                                      cmd.ranks, job.launch.ranks),
                       "leave out --ranks, or --set launch.ranks and the cluster's sizes");
  }
  if (cmd.min_bytes < 4 || cmd.max_bytes < cmd.min_bytes)
    throw UsageError("profile", fmt::format("--min-bytes {} --max-bytes {}: need 4 <= min <= max", cmd.min_bytes,
                                            cmd.max_bytes), "for example --min-bytes 8 --max-bytes 268435456");
  if (cmd.factor < 2) throw UsageError("profile --factor", "must be at least 2", "sizes grow by this factor");
  for (const std::string& a : cmd.algorithms) (void)parse_collective_algorithm(a);
}

int cmd_profile(const ProfileCommand& cmd, ProcessArgs process) {
  check(cmd);
  if (cmd.layers) return profile_layers(cmd);
  if (!cmd.dry_run && inside_mpi_job([](const char* v) { return std::getenv(v); })) return profile_rank(cmd, process);
  return relaunch_under_mpirun(launch_of(cmd), process, cmd.dry_run);
}

}  // namespace

void register_profile(CLI::App& app, Invocation& call) {
  auto opt = std::make_shared<ProfileCommand>();
  auto* cmd = app.add_subcommand("profile", "measure this launch: collectives (--collectives), compute speed per "
                                            "rank (--compute), links between ranks (--links), the model's blocks "
                                            "(--layers)");
  add_job_path(*cmd, opt->job.path, "a job file whose [launch] says where to run (optional)");
  cmd->add_flag("--collectives", opt->collectives, "time allreduce per algorithm and size (nccl-tests style table)");
  cmd->add_flag("--compute", opt->compute, "time each rank's forward+backward on the job's model; suggests I-DAT "
                                           "speeds");
  cmd->add_flag("--links", opt->links, "bandwidth and latency between every pair of ranks, one pair at a time "
                                       "(needs a job)");
  cmd->add_flag("--layers", opt->layers, "time every block of the job's model (forward, backward) on its device, in "
                                         "this process; with --out, a layer profile for plan --profile");
  cmd->add_option("--batch", opt->layers_batch, "--layers: samples of the micro-batch timed (default: the global "
                                                "batch / ranks)")
      ->check(CLI::PositiveNumber)->type_name("N");
  cmd->add_option("--device", opt->device, "--layers: times from this device kind's peak rates (a lower bound), the "
                                           "model not built (h200, h100, a100-80, a100-40, l40s, v100, rtx4090)")
      ->type_name("NAME");
  cmd->add_option("--out", opt->links_out, "write --links's measurements as a cluster file, or --layers's as a layer "
                                           "profile")
      ->type_name("FILE");
  add_overrides(*cmd, opt->job.overrides);
  cmd->add_option("--steps", opt->compute_steps, "timed steps of --compute (default 20)")
      ->check(CLI::PositiveNumber)->type_name("N");
  cmd->add_option("--ranks", opt->ranks, "ranks to launch (default: the job's, else 2)")
      ->check(CLI::PositiveNumber)->type_name("N");
  cmd->add_option("--algorithms", opt->algorithms, "comma-separated: native, ring")->delimiter(',')->type_name("LIST");
  cmd->add_option("--min-bytes", opt->min_bytes, "smallest buffer (default 8)")->type_name("BYTES");
  cmd->add_option("--max-bytes", opt->max_bytes, "largest buffer (default 256 MiB)")->type_name("BYTES");
  cmd->add_option("--factor", opt->factor, "size step factor (default 4)")->type_name("F");
  cmd->add_option("--iters", opt->iterations, "timed repetitions per size at most (default 20)")
      ->check(CLI::PositiveNumber)->type_name("N");
  cmd->add_option("--warmup", opt->warmup, "untimed repetitions first (default 5)")
      ->check(CLI::NonNegativeNumber)->type_name("N");
  cmd->add_flag("--json", opt->json, "one JSON object per measurement instead of the table");
  cmd->add_flag("--dry-run", opt->dry_run, "print the mpirun command, run nothing");
  cmd->callback([opt, &call] {
    if (opt->ranks == 0 && opt->job.path.empty()) opt->ranks = 2;
    call.status = cmd_profile(*opt, call.process);
  });
}

}  // namespace dp::app
