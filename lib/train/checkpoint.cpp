// Checkpoint file format, atomic writing and verified reading (sharded checkpoints' manifests and parts:
// checkpoint_parts.cpp).
//
// Layout (little-endian):
//   Header (fixed 88 bytes): magic "DPTRCKPT", u32 version, u32 header_bytes, u64 fingerprint,
//   char optimizer[16], i64 step, i64 optimizer_steps, u64 param_count, u64 state_count,
//   u64 payload_bytes, u32 payload_crc32, u32 header_crc32 (over the preceding header bytes)
//   Payload: params (param_count floats), optimizer state (state_count floats), then (version 2) the
//   grouping: u64 count, i32 groups; then (version 3) I-DAT's division: u64 count, f64 weights.
#include "lib/train/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "lib/core/error.h"
#include "lib/train/checkpoint_internal.h"

namespace dp {

using namespace checkpoint_detail;

void write_checkpoint(const std::string& path, const Checkpoint& c) {
  if (!c.parts.empty()) return write_manifest(path, c);
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kVersion;
  h.header_bytes = sizeof(Header);
  h.fingerprint = c.model_fingerprint;
  std::strncpy(h.optimizer, c.optimizer.c_str(), sizeof h.optimizer - 1);
  h.step = c.step;
  h.optimizer_steps = c.optimizer_steps;
  h.param_count = c.params.size();
  h.state_count = c.optimizer_state.size();
  const uint64_t group_count = c.groups.size();
  std::vector<int32_t> groups(c.groups.begin(), c.groups.end());
  const uint64_t weight_count = c.balance_weights.size();
  h.payload_bytes = (h.param_count + h.state_count) * sizeof(float) + sizeof group_count + groups.size() * 4 +
                    sizeof weight_count + weight_count * sizeof(double);
  h.payload_crc = crc32_of(c.params.data(), c.params.size() * sizeof(float));
  h.payload_crc = crc32_of(c.optimizer_state.data(), c.optimizer_state.size() * sizeof(float), h.payload_crc);
  h.payload_crc = crc32_of(&group_count, sizeof group_count, h.payload_crc);
  h.payload_crc = crc32_of(groups.data(), groups.size() * 4, h.payload_crc);
  h.payload_crc = crc32_of(&weight_count, sizeof weight_count, h.payload_crc);
  h.payload_crc = crc32_of(c.balance_weights.data(), weight_count * sizeof(double), h.payload_crc);
  h.header_crc = crc32_of(&h, offsetof(Header, header_crc));

  write_durably(path, [&](int fd, const std::string& tmp) {
    write_all(fd, &h, sizeof h, tmp);
    write_all(fd, c.params.data(), c.params.size() * sizeof(float), tmp);
    write_all(fd, c.optimizer_state.data(), c.optimizer_state.size() * sizeof(float), tmp);
    write_all(fd, &group_count, sizeof group_count, tmp);
    write_all(fd, groups.data(), groups.size() * 4, tmp);
    write_all(fd, &weight_count, sizeof weight_count, tmp);
    write_all(fd, c.balance_weights.data(), weight_count * sizeof(double), tmp);
  });
}

Checkpoint read_checkpoint(const std::string& path) {
  Checkpoint c = read_checkpoint_manifest(path);
  if (c.parts.empty()) return c;
  CheckpointRange all = read_checkpoint_range(c, 0, c.sharded_params, c.sharded_slots);
  c.params = std::move(all.params);
  c.optimizer_state = std::move(all.state);
  c.parts.clear();
  return c;
}

Checkpoint read_checkpoint_manifest(const std::string& path) {
  const char* delete_hint = "delete this file to resume from an older checkpoint, or start without --resume";
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CheckpointError(path, "cannot open checkpoint", "check the path and permissions");
  Header h{};
  in.read(reinterpret_cast<char*>(&h), sizeof h);
  if (in.gcount() != std::streamsize(sizeof h) || std::memcmp(h.magic, kMagic, sizeof kMagic) != 0)
    throw CheckpointError(path, "not a dptrain checkpoint (bad magic or shorter than a header)", delete_hint);
  if (h.version < 1 || h.version > kShardedVersion || h.header_bytes != sizeof(Header))
    throw CheckpointError(path, fmt::format("unsupported checkpoint format version {} (this dptrain reads {})",
                                            h.version, kShardedVersion), "use the dptrain version that wrote it");
  if (crc32_of(&h, offsetof(Header, header_crc)) != h.header_crc)
    throw CheckpointError(path, "header checksum mismatch: the checkpoint is corrupted", delete_hint);
  if (h.version == kShardedVersion) return read_manifest(path, h, in);
  // Counts beyond what the file could hold are refused before they are multiplied (which could wrap
  // around) or allocated.
  const auto file_bytes = std::filesystem::file_size(path);
  if (h.param_count > file_bytes / sizeof(float) || h.state_count > file_bytes / sizeof(float))
    throw CheckpointError(path, fmt::format("truncated, or a corrupted header: {} parameters and {} state values "
                                            "do not fit in a file of {} bytes", h.param_count, h.state_count,
                                            file_bytes),
                          delete_hint);
  const uint64_t floats_bytes = (h.param_count + h.state_count) * sizeof(float);
  const uint64_t extra = h.version == 1 ? 0 : h.payload_bytes - floats_bytes;
  // Version 3 has two counted arrays after the floats (the grouping, the division), checked as read.
  if (h.payload_bytes < floats_bytes || (h.version == 2 && (extra < 8 || (extra - 8) % 4 != 0)) ||
      (h.version == 3 && extra < 16) ||
      (h.version == 1 && extra != 0) || h.optimizer[15] != '\0')
    throw CheckpointError(path, "inconsistent header sizes: the checkpoint is corrupted", delete_hint);
  if (file_bytes != sizeof(Header) + h.payload_bytes)
    throw CheckpointError(path, fmt::format("truncated or padded: {} bytes, header promises {}", file_bytes,
                                            sizeof(Header) + h.payload_bytes), delete_hint);
  Checkpoint c;
  c.model_fingerprint = h.fingerprint;
  c.optimizer = h.optimizer;
  c.step = h.step;
  c.optimizer_steps = h.optimizer_steps;
  c.params.resize(h.param_count);
  c.optimizer_state.resize(h.state_count);
  in.read(reinterpret_cast<char*>(c.params.data()), std::streamsize(c.params.size() * sizeof(float)));
  in.read(reinterpret_cast<char*>(c.optimizer_state.data()),
          std::streamsize(c.optimizer_state.size() * sizeof(float)));
  uint64_t group_count = 0;
  std::vector<int32_t> groups;
  if (h.version > 1) {
    in.read(reinterpret_cast<char*>(&group_count), sizeof group_count);
    const uint64_t room = h.version == 2 ? (extra - 8) / 4 : (extra - 16) / 4;
    if (h.version == 2 ? group_count != room : group_count > room)
      throw CheckpointError(path, "inconsistent grouping size: the checkpoint is corrupted", delete_hint);
    groups.resize(group_count);
    in.read(reinterpret_cast<char*>(groups.data()), std::streamsize(groups.size() * 4));
  }
  uint64_t weight_count = 0;
  if (h.version > 2) {
    in.read(reinterpret_cast<char*>(&weight_count), sizeof weight_count);
    if (weight_count > extra / sizeof(double) || extra != 16 + group_count * 4 + weight_count * sizeof(double))
      throw CheckpointError(path, "inconsistent division size: the checkpoint is corrupted", delete_hint);
    c.balance_weights.resize(weight_count);
    in.read(reinterpret_cast<char*>(c.balance_weights.data()), std::streamsize(weight_count * sizeof(double)));
  }
  if (!in) throw CheckpointError(path, "read failed in the payload", delete_hint);
  uint32_t crc = crc32_of(c.params.data(), c.params.size() * sizeof(float));
  crc = crc32_of(c.optimizer_state.data(), c.optimizer_state.size() * sizeof(float), crc);
  if (h.version > 1) {
    crc = crc32_of(&group_count, sizeof group_count, crc);
    crc = crc32_of(groups.data(), groups.size() * 4, crc);
  }
  if (h.version > 2) {
    crc = crc32_of(&weight_count, sizeof weight_count, crc);
    crc = crc32_of(c.balance_weights.data(), c.balance_weights.size() * sizeof(double), crc);
  }
  c.groups.assign(groups.begin(), groups.end());
  c.path = path;
  if (crc != h.payload_crc)
    throw CheckpointError(path, "payload checksum mismatch: the checkpoint is corrupted", delete_hint);
  return c;
}

std::string checkpoint_path(const std::string& dir, int64_t step) {
  return fmt::format("{}/step-{:08d}.ckpt", dir, step);
}

std::vector<std::string> list_checkpoints(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && name.starts_with("step-") && name.ends_with(".ckpt"))
      files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());  // zero-padded step numbers sort by step
  return files;
}

std::optional<std::string> newest_checkpoint(const std::string& dir) {
  auto files = list_checkpoints(dir);
  if (files.empty()) return std::nullopt;
  return files.back();
}

void prune_checkpoints(const std::string& dir, int64_t keep) {
  auto files = list_checkpoints(dir);
  for (size_t i = 0; i + size_t(keep) < files.size(); ++i) {
    std::filesystem::remove(files[i]);
    remove_parts(files[i]);
  }
}

}  // namespace dp
