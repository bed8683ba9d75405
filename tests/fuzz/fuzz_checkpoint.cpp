// Fuzz target: the checkpoint loader (read_checkpoint, lib/train/checkpoint.cpp). Each input is read twice:
// as it is, and with its two CRC-32 fields recomputed (the payload's over the bytes after the 88-byte
// header, then the header's over its first 84 bytes), so that mutations reach the size checks behind the
// checksums. Bad files must be a CheckpointError; a checkpoint that reads has the sizes its header gives.
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "lib/core/error.h"
#include "lib/train/checkpoint.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

constexpr size_t kHeaderBytes = 88, kPayloadCrcAt = 80, kHeaderCrcAt = 84;

void read_one(const fuzz::TempFile& file, const uint8_t* data, size_t size) {
  const std::string& path = file.write(data, size);
  dp::Checkpoint c;
  try {
    c = dp::read_checkpoint(path);
  } catch (const dp::InputError& e) {
    fuzz::rejected(e);
    return;
  }
  // Version 2 adds the 8-byte group count and the groups; version 1 has neither.
  const uint64_t floats = kHeaderBytes + (c.params.size() + c.optimizer_state.size()) * sizeof(float);
  FUZZ_CHECK(floats + 8 + c.groups.size() * 4 == size || (floats == size && c.groups.empty()),
             "the checkpoint's sizes do not add up to the file's");
  FUZZ_CHECK(c.optimizer.size() < 16, "an optimizer name longer than its field");
}

uint32_t crc_of(const uint8_t* p, size_t n) { return uint32_t(::crc32(0, p, uInt(n))); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fuzz::TempFile file("step.ckpt");
  read_one(file, data, size);
  if (size < kHeaderBytes) return 0;
  std::vector<uint8_t> fixed(data, data + size);
  const uint32_t payload = crc_of(fixed.data() + kHeaderBytes, size - kHeaderBytes);
  std::memcpy(fixed.data() + kPayloadCrcAt, &payload, 4);
  const uint32_t header = crc_of(fixed.data(), kHeaderCrcAt);
  std::memcpy(fixed.data() + kHeaderCrcAt, &header, 4);
  read_one(file, fixed.data(), fixed.size());
  return 0;
}
