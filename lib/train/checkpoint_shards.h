// Sharded checkpoints (checkpoint.h's parts) of what replicas share: the replicas of a range of the model's
// parameters (every rank under "data", a pipeline stage's replicas) all hold its parameters, and each keeps
// the optimizer state of some ranges of it (MRA's shards, or all of it). Each replica writes one
// contiguous piece of the range as one part, the state of its piece brought to it point to point from the
// replicas that keep it: no rank ever holds more state than its own and its piece's. At resume each
// reads only the ranges it keeps.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lib/comm/communicator.h"
#include "lib/core/param_range.h"
#include "lib/train/checkpoint.h"

namespace dp {

struct ReplicatedState {
  int64_t begin = 0;              // the range's first parameter in the model
  std::span<const float> params;  // the range's parameters, whole (every replica holds them)
  std::span<const float> state;   // this replica's optimizer state: slot major over its ranges
  int slots = 0;
  // The ranges (offsets within the range) whose state replica r keeps, in the order of its state
  // (GradientSync::state_ranges).
  std::function<std::vector<ParamRange>(int r)> ranges;
};

// Collective over `replicas`: replica i writes piece i of the range (shard_range of its parameters) as
// part `index` of the checkpoint at `path`. Returns the part it wrote (nullopt: its piece is empty, a range
// of fewer parameters than replicas); throws what write_checkpoint_part
// throws, and NonFiniteError (nonfinite.h's check) for a non-finite parameter of its piece.
std::optional<CheckpointPart> write_replica_part(Communicator& replicas, const ReplicatedState& s,
                                                 const std::string& path,
                                                 int index, uint64_t fingerprint, int64_t step);

// Collective over every rank of the run: the manifest of the parts its ranks wrote (`mine`, as part `index`
// of the checkpoint at `path`; nullopt: this rank wrote none), on rank 0: `header` (its fingerprint,
// optimizer, steps, sharded_params and sharded_slots, and what else it holds) with the parts in the
// order of their parameters. Other ranks get an empty Checkpoint.
Checkpoint gather_manifest(Communicator& comm, const std::optional<CheckpointPart>& mine, int index,
                           const std::string& path, Checkpoint header);

// The optimizer state of `ranges` (offsets from parameter `begin`) from checkpoint `c`, slot major over
// the ranges in order: what a replica keeping them resumes from, read range by range.
std::vector<float> read_kept_state(const Checkpoint& c, int64_t begin, std::span<const ParamRange> ranges,
                                   int slots);

}  // namespace dp
