// What checkpoint.cpp and checkpoint_parts.cpp share: the file header, checksums and durable writing.
#pragma once

#include <unistd.h>
#include <zlib.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>

#include "lib/core/error.h"
#include "lib/train/checkpoint.h"

namespace dp::checkpoint_detail {

constexpr char kMagic[8] = {'D', 'P', 'T', 'R', 'C', 'K', 'P', 'T'};
// Version 2 appends the grouping of strategy "cgp" after the state: a uint64 count, then int32 groups
// (count 0 for other strategies); version 3 then I-DAT's division: a uint64 count, then float64 weights
// (count 0 without I-DAT). Versions 1 and 2 are still read.
constexpr uint32_t kVersion = 3;
// Version 4: a sharded checkpoint's manifest (checkpoint_parts.cpp): no values, the parts' table.
constexpr uint32_t kShardedVersion = 4;

#pragma pack(push, 1)
struct Header {
  char magic[8];
  uint32_t version;
  uint32_t header_bytes;
  uint64_t fingerprint;
  char optimizer[16];
  int64_t step;
  int64_t optimizer_steps;
  uint64_t param_count;
  uint64_t state_count;
  uint64_t payload_bytes;
  uint32_t payload_crc;
  uint32_t header_crc;
};
#pragma pack(pop)
static_assert(sizeof(Header) == 88);

inline uint32_t crc32_of(const void* data, size_t bytes, uint32_t crc = 0) {
  const auto* p = static_cast<const Bytef*>(data);
  while (bytes > 0) {  // zlib takes uInt lengths
    const uInt n = uInt(std::min<size_t>(bytes, 1u << 30));
    crc = uint32_t(::crc32(crc, p, n));
    p += n;
    bytes -= n;
  }
  return crc;
}

inline void write_all(int fd, const void* data, size_t bytes, const std::string& path) {
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd, p, bytes);
    if (n < 0) throw RuntimeFailure(path, fmt::format("write failed: {}", std::strerror(errno)), "check free disk space");
    p += n;
    bytes -= size_t(n);
  }
}


// Writes `path` atomically: `write` fills a temporary file (its descriptor and name), which is flushed,
// synced and renamed over `path`, and the rename synced.
void write_durably(const std::string& path, const std::function<void(int fd, const std::string& tmp)>& write);

// checkpoint_parts.cpp: a sharded checkpoint's manifest, written and read (`in` after the header `h`,
// which read_checkpoint_manifest has checked); its part files removed with it.
void write_manifest(const std::string& path, const Checkpoint& c);
Checkpoint read_manifest(const std::string& path, const Header& h, std::ifstream& in);
void remove_parts(const std::string& path);

}  // namespace dp::checkpoint_detail
