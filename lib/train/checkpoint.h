// Checkpoints: a verified header (magic, format version, sizes, architecture fingerprint, checksums) and
// the flat parameter and optimizer-state buffers. Written atomically (temporary file, flush, fsync,
// rename), so a crash never leaves a half-written checkpoint under a final name.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace dp {

struct Checkpoint {
  uint64_t model_fingerprint = 0;
  std::string optimizer;      // "sgd" | "adamw"
  int64_t step = 0;           // steps completed
  int64_t optimizer_steps = 0;
  std::vector<float> params;
  std::vector<float> optimizer_state;  // strategy "cgp": every group's whole state, in group order
  std::vector<int> groups;             // strategy "cgp": the group of every rank; empty otherwise
  std::vector<double> balance_weights; // I-DAT: the division's proportions, one per rank; empty otherwise

  // Optimizer states held: one per group under "cgp", else one.
  size_t state_count() const { return groups.empty() ? 1 : size_t(*std::max_element(groups.begin(), groups.end()) + 1); }
  // One optimizer state: group `g`'s under "cgp"; the only one otherwise. A strategy without groups
  // continues from the first group's.
  std::span<const float> group_state(size_t g = 0) const {
    const size_t per_group = optimizer_state.size() / state_count();
    return std::span<const float>(optimizer_state).subspan(g * per_group, per_group);
  }
};

// Writes `ckpt` to `path` atomically. Throws RuntimeFailure on I/O errors.
void write_checkpoint(const std::string& path, const Checkpoint& ckpt);
// Reads and verifies everything before returning. Throws CheckpointError naming the file and what is
// wrong (not a checkpoint, newer format, truncated, checksum mismatch).
Checkpoint read_checkpoint(const std::string& path);

// Checkpoint files in `dir` ("step-00000123.ckpt"), oldest first.
std::vector<std::string> list_checkpoints(const std::string& dir);
std::optional<std::string> newest_checkpoint(const std::string& dir);
std::string checkpoint_path(const std::string& dir, int64_t step);
// Deletes all but the newest `keep` checkpoints in `dir`.
void prune_checkpoints(const std::string& dir, int64_t keep);

}  // namespace dp
