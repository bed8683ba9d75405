// Checkpoints: a verified header (magic, format version, sizes, architecture fingerprint, checksums) and
// the flat parameter and optimizer-state buffers. Written atomically (temporary file, flush, fsync,
// rename), so a crash never leaves a half-written checkpoint under a final name.
// A sharded checkpoint (format 4, checkpoint_parts.cpp) keeps the values in part files beside it, each a
// range of the parameters with their optimizer state, written in parallel by the ranks that hold them
// (pipeline stages); the checkpoint itself is then a manifest of the parts and their checksums, written
// last, so it names only parts already complete. Any range of it can be read alone.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace dp {

// One part of a sharded checkpoint: parameters [begin, end) and their optimizer state, in a file beside
// the manifest.
struct CheckpointPart {
  int64_t begin = 0, end = 0;
  std::string file;    // its name, in the manifest's folder
  uint64_t bytes = 0;  // the file's size
  uint32_t crc = 0;    // of its values
};

struct Checkpoint {
  uint64_t model_fingerprint = 0;
  std::string optimizer;      // "sgd" | "adamw"
  int64_t step = 0;           // steps completed
  int64_t optimizer_steps = 0;
  std::vector<float> params;
  std::vector<float> optimizer_state;  // strategy "cgp": every group's whole state, in group order
  std::vector<int> groups;             // strategy "cgp": the group of every rank; empty otherwise
  std::vector<double> balance_weights; // I-DAT: the division's proportions, one per rank; pipeline: the
                                       //   speeds its replicas' division was made from; empty otherwise
  // Sharded: the parts covering [0, sharded_params) in order, each with `sharded_slots` state slots;
  // params and optimizer_state are then empty (read_checkpoint fills them; read_checkpoint_range reads a
  // range). `path`: where it was read from.
  std::vector<CheckpointPart> parts;
  int64_t sharded_params = 0;
  int sharded_slots = 0;
  std::string path;

  int64_t param_count() const { return parts.empty() ? int64_t(params.size()) : sharded_params; }

  // Optimizer states held: one per group under "cgp", else one.
  size_t state_count() const { return groups.empty() ? 1 : size_t(*std::max_element(groups.begin(), groups.end()) + 1); }
  // One optimizer state: group `g`'s under "cgp"; the only one otherwise. A strategy without groups
  // continues from the first group's.
  std::span<const float> group_state(size_t g = 0) const {
    const size_t per_group = optimizer_state.size() / state_count();
    return std::span<const float>(optimizer_state).subspan(g * per_group, per_group);
  }
};

// Writes `ckpt` to `path` atomically (with parts: the manifest; its parts must be written). Throws
// RuntimeFailure on I/O errors.
void write_checkpoint(const std::string& path, const Checkpoint& ckpt);
// Reads and verifies everything before returning (a sharded checkpoint's parts too, assembled). Throws
// CheckpointError naming the file and what is wrong (not a checkpoint, newer format, truncated, checksum
// mismatch, a part missing or corrupt).
Checkpoint read_checkpoint(const std::string& path);
// The same, but a sharded checkpoint's values stay in its parts (each verified, read in pieces, never
// held whole): what a rank that holds only part of the model resumes from, with read_checkpoint_range.
Checkpoint read_checkpoint_manifest(const std::string& path);

// Part `index` of the checkpoint at `path` (a manifest): parameters [begin, begin + params.size()) and
// their optimizer state (`slots` x params.size(), slot major), written atomically beside it.
std::string checkpoint_part_path(const std::string& path, int index);
CheckpointPart write_checkpoint_part(const std::string& path, int index, int64_t begin, std::span<const float> params,
                                     std::span<const float> state, int slots, uint64_t fingerprint, int64_t step);
// Parameters [begin, end) and their optimizer state (the first group's; slot major, `slots` slots; 0: the
// parameters alone) of a checkpoint, from its values or its parts.
struct CheckpointRange {
  std::vector<float> params, state;
};
CheckpointRange read_checkpoint_range(const Checkpoint& c, int64_t begin, int64_t end, int slots);

// Checkpoint files in `dir` ("step-00000123.ckpt"), oldest first.
std::vector<std::string> list_checkpoints(const std::string& dir);
std::optional<std::string> newest_checkpoint(const std::string& dir);
std::string checkpoint_path(const std::string& dir, int64_t step);
// Deletes all but the newest `keep` checkpoints in `dir`.
void prune_checkpoints(const std::string& dir, int64_t keep);

}  // namespace dp
