// The options of each dptrain subcommand, filled by the CLI11 wiring in main.cpp, and the function in
// cmd_<name>.cpp that carries it out by calling libdptrain. Returns the process exit status.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/job/job.h"
#include "lib/launch/launcher.h"

namespace dp::app {

// Process arguments, for subcommands that start MPI or relaunch themselves.
struct ProcessArgs {
  int* argc;
  char*** argv;
};

struct RunCommand {
  std::string job_path;
  std::vector<std::string> overrides;  // --set dotted.key=value
  std::string out_dir;                 // --out
  bool resume = false, force = false, dry_run = false, json = false;
};
int cmd_run(const RunCommand& cmd, ProcessArgs process);

struct ProfileCommand {
  bool collectives = false;             // --collectives: time the allreduce algorithms
  bool compute = false;                 // --compute: each rank's compute speed on the job's model
  bool links = false;                   // --links: bandwidth and latency between every pair of ranks
  bool layers = false;                  // --layers: every block of the job's model timed (one process)
  int64_t layers_batch = 0;             // --batch: the micro-batch --layers times (0: global batch / ranks)
  std::string links_out;                // --out: --links's measurements as a cluster file, or --layers's
                                        //   as a layer profile
  int compute_steps = 20;               // --steps (timed forward+backward steps of --compute)
  std::string job_path;                 // optional: its [launch] section says where to run
  std::vector<std::string> overrides;   // --set dotted.key=value
  int64_t ranks = 0;                    // --ranks (overrides the job's; default 2 without a job)
  std::vector<std::string> algorithms{"native", "ring"};
  int64_t min_bytes = 8, max_bytes = int64_t(256) << 20, factor = 4;
  int iterations = 20, warmup = 5;
  bool json = false, dry_run = false;
};
int cmd_profile(const ProfileCommand& cmd, ProcessArgs process);

struct PlanCommand {
  std::string job_path;
  std::vector<std::string> overrides;  // --set dotted.key=value
  int64_t workers = 0;                 // --workers: plan CGP for this many ranks drawn from the job's kinds
  uint64_t seed = 0;                   // --seed: of the draw and the solvers (seed_given false: [job] seed)
  bool seed_given = false;
  bool json = false;                   // --json: one JSON object instead of the text (cgp, pipeline)
  std::string cluster_file;            // --cluster: plan on this cluster file's [cluster] instead of the job's
  std::string profile;                 // --profile: a layer profile; plans a pipeline
  double profile_batch = 0;            // --profile-batch: samples the profile's times are for (0: global batch)
  std::string stages;                  // --stages: a partition to evaluate beside the planner's
  int64_t micro_batches = 0;           // --micro-batches: M (0: the planner tries the divisors up to 64)
};
int cmd_plan(const PlanCommand& cmd);
// plan_cgp.cpp: cmd_plan for [parallel] strategy = "cgp".
int plan_cgp(const PlanCommand& cmd, const Job& job);
// plan_pipeline.cpp: cmd_plan with --profile: stages, devices, micro-batches and recomputation.
int plan_pipeline(const PlanCommand& cmd, const Job& job);

struct EstimateCommand {
  std::string job_path;
  std::vector<std::string> overrides;  // --set dotted.key=value
  std::string cluster_file;            // --cluster: this cluster file's [cluster] instead of the job's
  std::string profile;                 // --profile: a dptrain layer profile of the job's model (times)
  std::string device;                  // --device: a known kind (times from its peak rates; --fit's kind)
  double peak_tflops = 0, bandwidth_gbps = 0, device_memory_gb = 0;  // a device given by numbers
  bool fit = false;                    // --fit: the fewest devices of the kind the job fits on
  bool no_timing = false;              // --no-timing: memory only (no blocks timed here)
  bool json = false;
  std::string emit;                    // --emit slurm | k8s: the scheduler's job sized from the estimate
  std::string image;                   // --image: the container image of --emit k8s
};
int cmd_estimate(const EstimateCommand& cmd);

struct MonitorCommand {
  std::string run_dir;    // a run's output directory
  bool once = false;      // --once: one plain snapshot, also on a terminal
  bool json = false;      // --json: the snapshot as one JSON object
  std::string plot;       // --plot: write loss, throughput and per-rank wait over time as an SVG
  double interval = 1.0;  // --interval: seconds between redraws on a terminal
  int window = 10;        // --window: the newest logged steps the per-rank figures cover
};
int cmd_monitor(const MonitorCommand& cmd);

// Outside an MPI job: runs this same command line (less --dry-run, plus extra_args) on the ranks of
// `launch` through mpirun (or srun in a Slurm allocation, slurm.h) and returns its exit status; with
// dry_run, prints the command instead. Checks the hostfile first. `on_signal`: what a stop signal sent to
// this process while the ranks run does (launcher.h).
int relaunch_under_mpirun(const LaunchSection& launch, ProcessArgs process, bool dry_run,
                          const std::vector<std::string>& extra_args = {}, OnSignal on_signal = OnSignal::forward);

// The job as its ranks will load it: inside a Slurm allocation, a job that does not say how many ranks
// takes the allocation's tasks ("--set=launch.ranks=N" appended to rank_args for the ranks).
Job job_as_launched(const std::string& job_path, const std::vector<std::string>& overrides,
                    std::vector<std::string>& rank_args);

// "dptrain 0.1.0" and the compiled-in backends.
std::string version_text();

}  // namespace dp::app
