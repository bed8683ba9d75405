// Rank 0's pipeline plan, sent to every rank (strategy "pipeline", pipeline_strategy.cpp): rank 0
// chooses it (timing the model's blocks when the job gives no profile) while the others wait asleep, so
// as not to spin on the cores it times on; an input error on rank 0 reaches every rank, and all throw
// it alike (each exits with status 2).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "lib/comm/communicator.h"
#include "lib/pipeline/plan.h"
#include "lib/train/pipeline/pipeline_runner.h"

namespace dp::pipeline_detail {

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
