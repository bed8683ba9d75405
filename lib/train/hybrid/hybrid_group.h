// One rank's place in a group of strategy "cgp-pipeline" (hybrid_strategy.cpp): its stage of the group's
// pipeline (built as strategy "pipeline" builds one, over the group's communicator), the group's local
// mini-batches through it (1F1B, StageRunner), and its stage's exchanges with its stage's shard of the
// global model (cgp_exchange.h's protocol over the shard's communicator: the stage's ranks of every
// group, the shard's host first).
//
// An exchange of a group: every rank of the group with a stage shares its loss and stop request; the
// members of the leading stage (the stage of the run's rank 0) exchange with the leading shard, which
// holds the update to the staleness bound and hands out the group's next chunk; the group learns the
// chunk from its leading stage's first member; then the members of every other stage exchange with
// their stage's shard, naming that chunk (the follower hands it back and applies the update at once).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "lib/balance/emulate.h"
#include "lib/core/memory_meter.h"
#include "lib/mra/mra.h"
#include "lib/optim/optimizer.h"
#include "lib/train/cgp/cgp_exchange.h"
#include "lib/train/pipeline/pipeline_decision.h"
#include "lib/train/pipeline/pipeline_runner.h"
#include "lib/train/strategy.h"
#include "models/stage.h"

namespace dp::hybrid_detail {

struct GroupPlace {
  int group = 0, groups = 1;  // this rank's group, and how many
  int local = 0;              // this rank's index in its group (ranks in run order)
  int leading_stage = 0;      // the stage whose shard leads (the run's rank 0's)
};

class PipelineGroup {
 public:
  // Collective over every rank. `group_comm`: this rank's group's communicator; `shared`: the stages,
  // in ranks of a group; `meter`: what the stage allocates is counted on it.
  PipelineGroup(const StrategyInputs& in, std::unique_ptr<Communicator> group_comm, const GroupPlace& place,
                const pipeline_detail::SharedPlan& shared, cgp_detail::SampleClock clock, SlowdownEmulator& emulator,
                std::shared_ptr<MemoryMeter> meter);
  ~PipelineGroup();

  // One exchange of the group (every rank of the group with a stage; one without returns {} at once): the
  // update since the last read (an update), a read or progress only, after the chunk [begin, begin +
  // count) with this rank's loss sum over it. Returns the group's next chunk; after an update or a read
  // the stage holds its shard's global values.
  cgp_detail::ExchangeReply exchange(cgp_detail::ExchangeKind kind, int64_t begin, int64_t count, double loss_sum);
  // The local mini-batches of a chunk (`between` after each); returns this rank's loss sum over it.
  double train_chunk(int64_t begin, int64_t count, const std::function<void()>& between);
  // Forward only through the group's stages (group 0 after a phase holds the global model).
  StepStats evaluate(const Dataset& held_out);

  bool has_stage() const { return stage_ != nullptr; }
  int stage() const { return place_.stage; }
  const pipeline_detail::Placement& placement() const { return place_; }
  Stage& stage_params() { return *stage_; }
  Communicator& stage_comm() { return *stage_comm_; }
  GradientSync& sync() { return *sync_; }
  Optimizer& optimizer() { return *optimizer_; }
  cgp_detail::ParameterServer* server() { return server_.get(); }  // this rank hosts its stage's shard
  const std::vector<int>& shard_grouping() const { return shard_grouping_; }
  int64_t group_batch() const { return group_batch_; }

 private:
  void build_stage(const pipeline_detail::SharedPlan& shared);
  void build_shard();

  const StrategyInputs& in_;
  std::unique_ptr<Communicator> group_comm_;
  GroupPlace group_place_;
  pipeline_detail::Placement place_;
  cgp_detail::SampleClock clock_;
  SlowdownEmulator& emulator_;
  std::shared_ptr<MemoryMeter> meter_;
  std::unique_ptr<Communicator> stage_comm_;  // this stage's replicas in the group
  std::unique_ptr<Communicator> staged_comm_;  // the group's ranks with a stage (all but those the plan leaves out)
  int leader_in_staged_ = 0;                    // the leading stage's first replica's rank in it
  std::unique_ptr<Stage> stage_;
  std::unique_ptr<GradientSync> sync_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<pipeline_detail::StageRunner> runner_;
  std::unique_ptr<Communicator> shard_comm_;  // this stage's ranks of every group, the shard's host first
  std::vector<int> shard_grouping_;           // the group of each of the shard communicator's ranks
  std::unique_ptr<cgp_detail::ParameterServer> server_;
  EpochOrder order_;
  int64_t group_batch_ = 1, version_ = 0;
  double last_lr_ = 0;
  std::vector<float> read_slice_;
  // Since the last exchange, for the server's metrics lines.
  double compute_ms_ = 0, comm_ms_ = 0, last_exchange_ms_ = 0;
  int64_t samples_ = 0, local_steps_ = 0;
  uint64_t digest_ = 0;
};

}  // namespace dp::hybrid_detail
