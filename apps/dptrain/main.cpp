// dptrain's command line. All CLI11 wiring lives in this one translation unit (CLI11 is slow to
// compile); each subcommand's work is in cmd_<name>.cpp. Errors from libdptrain become one line on
// stderr and an exit status: 2 for bad input, 1 for failures while running.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <new>
#include <string_view>

#include "apps/dptrain/commands.h"
#include "lib/core/backend.h"
#include "lib/core/error.h"
#include "lib/core/stop_signal.h"
#include "lib/machine/machine.h"
#include "lib/measure/device.h"

namespace dp::app {

std::string version_text() {
  return fmt::format("dptrain {}\nbackends: {}\nmachine: {}", DPTRAIN_VERSION, describe_backends(probe_backends()),
                     this_machine().line());
}

// One line for a command-line mistake, naming an unknown subcommand instead of CLI11's "a subcommand is
// required".
std::string usage_error_line(const CLI::App& app, int argc, char** argv, const CLI::ParseError& e) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  const std::string valid = fmt::format("{}", fmt::join(names, ", "));
  if (argc > 1 && argv[1][0] != '-' && std::find(names.begin(), names.end(), argv[1]) == names.end())
    return dp::UsageError("", fmt::format("unknown subcommand '{}'", argv[1]), "valid: " + valid).line();
  return dp::UsageError("", e.what(), "see 'dptrain --help'").line();
}

}  // namespace dp::app

int main(int argc, char** argv) {
  using namespace dp::app;
  // A rank of a training job: from its first instruction, a stop signal asks for a checkpoint (stop_signal.h).
  if (argc > 1 && std::string_view(argv[1]) == "run" && dp::inside_mpi_job([](const char* v) { return std::getenv(v); }))
    dp::install_stop_handlers();
  try {  // before anything runs: may re-execute this process with the BLAS kernels this CPU can run
    dp::machine::settle_blas_kernels(argv);
  } catch (const dp::Error& e) {
    std::fprintf(stderr, "dptrain: %s\n", e.line().c_str());
    return e.exit_code();
  }
  CLI::App app{"dptrain: data-parallel deep-learning training for clusters whose machines and links differ.\n"
               "Jobs are TOML files (man dptrain-job(5))."};
  app.set_version_flag("--version", [] { return version_text(); }, "print the version and backends, then exit");
  app.require_subcommand(1);
  int status = 0;
  ProcessArgs process{&argc, &argv};

  RunCommand run;
  auto* run_cmd = app.add_subcommand("run", "train a job; outside an MPI job, launch itself under mpirun");
  run_cmd->add_option("job", run.job_path, "the TOML job file")->required()->type_name("JOB.toml");
  run_cmd->add_option("--set", run.overrides, "override a job key, validated like the file (repeatable)")
      ->type_name("KEY=VALUE")->allow_extra_args(false);
  run_cmd->add_option("--out", run.out_dir, "output directory (default: [job] output_dir, else runs/<name>)")
      ->type_name("DIR");
  run_cmd->add_flag("--resume", run.resume, "continue from the newest checkpoint in the output directory");
  run_cmd->add_flag("--force", run.force, "replace an earlier run in the output directory");
  run_cmd->add_flag("--dry-run", run.dry_run, "check everything and print the mpirun command, run nothing");
  run_cmd->add_flag("--json", run.json, "print summary.json on stdout at the end (progress goes to stderr)");
  run_cmd->callback([&] { status = cmd_run(run, process); });

  PlanCommand plan;
  auto* plan_cmd = app.add_subcommand("plan", "show how a job would divide its batch and bucket its "
                                              "gradients, group its ranks (strategy cgp), or run as a "
                                              "pipeline (--profile, or strategy pipeline)");
  plan_cmd->add_option("job", plan.job_path, "the TOML job file")->required()->type_name("JOB.toml");
  plan_cmd->add_option("--set", plan.overrides, "override a job key, validated like the file (repeatable)")
      ->type_name("KEY=VALUE")->allow_extra_args(false);
  plan_cmd->add_option("--workers", plan.workers,
                       "cgp, pipeline: plan for N ranks drawn from the job's device kinds (default: the job's ranks)")
      ->check(CLI::PositiveNumber)->type_name("N");
  auto* plan_seed = plan_cmd->add_option("--seed", plan.seed, "cgp, pipeline: seed of --workers' draw and of the "
                                                              "solvers (default: [job] seed)")->type_name("S");
  plan_cmd->add_flag("--json", plan.json, "cgp, pipeline: print the plan as one JSON object");
  plan_cmd->add_option("--cluster", plan.cluster_file, "plan on this cluster file's [cluster] instead of the job's")
      ->type_name("FILE");
  plan_cmd->add_option("--profile", plan.profile,
                       "plan a pipeline from this layer profile (profile --layers --out, or PipeDream's graph.txt): "
                       "stages, devices, "
                       "micro-batches, recomputation")->type_name("FILE");
  plan_cmd->add_option("--profile-batch", plan.profile_batch,
                       "pipeline: samples of a minibatch in the profile's times and sizes (default: the job's "
                       "global batch)")->check(CLI::PositiveNumber)->type_name("N");
  plan_cmd->add_option("--stages", plan.stages,
                       "pipeline: also evaluate these stages, \"0-16x3,17-39\" (block ranges, xR replicas) or "
                       "\"0-16@0+1+2,17-39@3\" (their ranks)")->type_name("STAGES");
  plan_cmd->add_option("--micro-batches", plan.micro_batches,
                       "pipeline: micro-batches per mini-batch (default: the best divisor of the global batch "
                       "up to 64)")->check(CLI::PositiveNumber)->type_name("M");
  plan_cmd->callback([&] {
    plan.seed_given = plan_seed->count() > 0;
    status = cmd_plan(plan);
  });

  EstimateCommand est;
  auto* est_cmd = app.add_subcommand("estimate", "estimate what a job needs per device (memory by term, FLOPs, step, "
                                                 "epoch and job time) and in all (the fewest devices, a "
                                                 "scheduler's request)");
  est_cmd->add_option("job", est.job_path, "the TOML job file")->required()->type_name("JOB.toml");
  est_cmd->add_option("--set", est.overrides, "override a job key, validated like the file (repeatable)")
      ->type_name("KEY=VALUE")->allow_extra_args(false);
  est_cmd->add_option("--cluster", est.cluster_file, "estimate on this cluster file's [cluster] instead of the job's")
      ->type_name("FILE");
  est_cmd->add_option("--profile", est.profile, "step times from this layer profile of the job's model "
                                                "(profile --layers --out)")->type_name("FILE");
  est_cmd->add_option("--device", est.device, "a device kind: times from its peak rates (a lower bound) and --fit's "
                                              "kind (h200, h100, a100-80, a100-40, l40s, v100, rtx4090)")
      ->type_name("NAME");
  est_cmd->add_option("--peak-tflops", est.peak_tflops, "the device's peak TFLOP/s (instead of or over --device)")
      ->check(CLI::PositiveNumber)->type_name("X");
  est_cmd->add_option("--bandwidth", est.bandwidth_gbps, "the device's memory bandwidth in GB/s")
      ->check(CLI::PositiveNumber)->type_name("GBPS");
  est_cmd->add_option("--device-memory", est.device_memory_gb, "the device's memory in GB")
      ->check(CLI::PositiveNumber)->type_name("GB");
  est_cmd->add_flag("--fit", est.fit, "also find the fewest devices of the kind on which every rank fits");
  est_cmd->add_flag("--no-timing", est.no_timing, "memory only: time nothing (without --profile or --device the "
                                                  "blocks are timed here)");
  est_cmd->add_flag("--json", est.json, "print the estimate as one JSON object");
  est_cmd->add_option("--emit", est.emit, "print instead an sbatch script (slurm) or a Kubeflow MPIJob manifest (k8s) "
                                          "sized from the estimate")
      ->check(CLI::IsMember({"slurm", "k8s"}))->type_name("slurm|k8s");
  est_cmd->add_option("--image", est.image, "--emit k8s: the container image (default localhost/dptrain:VERSION)")
      ->type_name("IMAGE");
  est_cmd->callback([&] { status = cmd_estimate(est); });

  ProfileCommand profile;
  auto* profile_cmd = app.add_subcommand("profile", "measure this launch: collectives (--collectives), compute "
                                                    "speed per rank (--compute), links between ranks (--links), "
                                                    "the model's blocks (--layers)");
  profile_cmd->add_option("job", profile.job_path, "a job file whose [launch] says where to run (optional)")
      ->type_name("JOB.toml");
  profile_cmd->add_flag("--collectives", profile.collectives,
                        "time allreduce per algorithm and size (nccl-tests style table)");
  profile_cmd->add_flag("--compute", profile.compute,
                        "time each rank's forward+backward on the job's model; suggests I-DAT speeds");
  profile_cmd->add_flag("--links", profile.links,
                        "bandwidth and latency between every pair of ranks, one pair at a time (needs a job)");
  profile_cmd->add_flag("--layers", profile.layers,
                        "time every block of the job's model (forward, backward) on its device, in this process; "
                        "with --out, a layer profile for plan --profile");
  profile_cmd->add_option("--batch", profile.layers_batch,
                          "--layers: samples of the micro-batch timed (default: the global batch / ranks)")
      ->check(CLI::PositiveNumber)->type_name("N");
  profile_cmd->add_option("--out", profile.links_out,
                          "write --links's measurements as a cluster file, or --layers's as a layer profile")
      ->type_name("FILE");
  profile_cmd->add_option("--set", profile.overrides, "override a job key, validated like the file (repeatable)")
      ->type_name("KEY=VALUE")->allow_extra_args(false);
  profile_cmd->add_option("--steps", profile.compute_steps, "timed steps of --compute (default 20)")
      ->check(CLI::PositiveNumber)->type_name("N");
  profile_cmd->add_option("--ranks", profile.ranks, "ranks to launch (default: the job's, else 2)")
      ->check(CLI::PositiveNumber)->type_name("N");
  profile_cmd->add_option("--algorithms", profile.algorithms, "comma-separated: native, ring")
      ->delimiter(',')->type_name("LIST");
  profile_cmd->add_option("--min-bytes", profile.min_bytes, "smallest buffer (default 8)")->type_name("BYTES");
  profile_cmd->add_option("--max-bytes", profile.max_bytes, "largest buffer (default 256 MiB)")->type_name("BYTES");
  profile_cmd->add_option("--factor", profile.factor, "size step factor (default 4)")->type_name("F");
  profile_cmd->add_option("--iters", profile.iterations, "timed repetitions per size at most (default 20)")
      ->check(CLI::PositiveNumber)->type_name("N");
  profile_cmd->add_option("--warmup", profile.warmup, "untimed repetitions first (default 5)")
      ->check(CLI::NonNegativeNumber)->type_name("N");
  profile_cmd->add_flag("--json", profile.json, "one JSON object per measurement instead of the table");
  profile_cmd->add_flag("--dry-run", profile.dry_run, "print the mpirun command, run nothing");
  profile_cmd->callback([&] {
    if (profile.ranks == 0 && profile.job_path.empty()) profile.ranks = 2;
    status = cmd_profile(profile, process);
  });

  MonitorCommand monitor;
  auto* monitor_cmd = app.add_subcommand("monitor", "watch a running or finished job from its run directory: "
                                                    "per-rank speed, share, compute/comm/wait split, memory, "
                                                    "loss, progress, ETA and the slow rank");
  monitor_cmd->add_option("run_dir", monitor.run_dir, "the run's output directory")->required()->type_name("RUN_DIR");
  monitor_cmd->add_flag("--once", monitor.once, "print one plain snapshot and exit (also on a terminal)");
  monitor_cmd->add_flag("--json", monitor.json, "print the snapshot as one JSON object and exit");
  monitor_cmd->add_option("--plot", monitor.plot, "write loss, throughput and per-rank wait over time as an SVG")
      ->type_name("FILE.svg");
  monitor_cmd->add_option("--interval", monitor.interval, "seconds between redraws on a terminal (default 1)")
      ->check(CLI::Range(0.05, 3600.0))->type_name("SECONDS");
  monitor_cmd->add_option("--window", monitor.window, "logged steps the per-rank figures cover (default 10)")
      ->check(CLI::Range(1, 1000000))->type_name("STEPS");
  monitor_cmd->callback([&] { status = cmd_monitor(monitor); });

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "dptrain: %s\n", usage_error_line(app, argc, argv, e).c_str());
    return 2;
  } catch (const dp::Error& e) {
    std::fprintf(stderr, "dptrain: %s\n", e.line().c_str());
    return e.exit_code();
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "dptrain: error: out of memory (hint: 'dptrain estimate JOB' says what each rank needs; "
                         "a smaller model, batch or more ranks need less)\n");
    return 1;
  }
  return status;
}
