// `dptrain profile`'s options (cmd_profile.cpp registers and checks them) and its measurements
// (profile_measure.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apps/dptrain/commands.h"

namespace dp::app {

struct ProfileCommand {
  bool collectives = false;             // --collectives: time the allreduce algorithms
  bool compute = false;                 // --compute: each rank's compute speed on the job's model
  bool links = false;                   // --links: bandwidth and latency between every pair of ranks
  bool layers = false;                  // --layers: every block of the job's model timed (one process)
  int64_t layers_batch = 0;             // --batch: the micro-batch --layers times (0: global batch / ranks)
  std::string device;                   // --device: --layers's times from this kind's peak rates, not timed
  std::string links_out;                // --out: --links's measurements as a cluster file, or --layers's
                                        //   as a layer profile
  int compute_steps = 20;               // --steps (timed forward+backward steps of --compute)
  JobArgs job;                          // optional: its [launch] section says where to run
  int64_t ranks = 0;                    // --ranks (overrides the job's; default 2 without a job)
  std::vector<std::string> algorithms{"native", "ring"};
  int64_t min_bytes = 8, max_bytes = int64_t(256) << 20, factor = 4;
  int iterations = 20, warmup = 5;
  bool json = false, dry_run = false;
};

// Inside an MPI job: --compute, --links and --collectives on the world's ranks (paced by the job's
// emulated links when it has them); rank 0 prints. Returns 1 when a collective summed wrongly.
int profile_rank(const ProfileCommand& cmd, ProcessArgs process);
// Every block of the job's model timed in this process, as a table, and with --out as a layer profile.
int profile_layers(const ProfileCommand& cmd);

}  // namespace dp::app
