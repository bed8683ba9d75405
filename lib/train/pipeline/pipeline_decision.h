// Rank 0's pipeline plan, sent to every rank (strategy "pipeline", pipeline_strategy.cpp): rank 0
// chooses it (timing the model's blocks when the job gives no profile) while the others wait asleep, so
// as not to spin on the cores it times on; an input error on rank 0 reaches every rank, and all throw
// it alike (each exits with status 2).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "lib/comm/communicator.h"
#include "lib/data/dataset.h"
#include "lib/job/job.h"
#include "lib/pipeline/plan.h"
#include "lib/pipeline/profile.h"
#include "models/model.h"
#include "lib/train/pipeline/pipeline_runner.h"

namespace dp::pipeline_detail {

// The model's blocks timed one at a time on every rank, all at once (as they will train: sharing this
// machine's cores, their emulated slowness at the run's start included): this rank's profile, and every
// rank's forward and backward time of the whole model at its micro-batch. Collective.
struct TimedBlocks {
  pipeline::BlockProfile profile;   // this rank's
  std::vector<double> step_ms;      // every rank's
  std::vector<int64_t> local_batch;  // the micro-batch each rank timed at
};
TimedBlocks time_blocks_everywhere(const Job& job, Communicator& comm, Model& model, const Dataset& data);

struct SharedPlan {
  pipeline::Plan plan;
  std::vector<std::vector<int64_t>> shares;  // every stage's rows of a full micro-batch, per replica
};

// `choose` runs on rank 0 only; an InputError it throws is thrown on every rank (as a JobError).
// Collective.
SharedPlan share_rank0_plan(Communicator& comm, const std::function<pipeline::PlanResult()>& choose);

// Every stage's ranks and rows, and where `rank` is among them.
Placement placement_of(const SharedPlan& shared, int rank);

}  // namespace dp::pipeline_detail
