// IDX files (the MNIST family's format), gzip-compressed or plain: a big-endian header (magic 0x0000TTNN:
// element type TT, NN dimensions), NN big-endian uint32 sizes, then the elements. Private to lib/data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dp {

// Element type code of unsigned bytes, the only one dptrain reads.
inline constexpr uint8_t kIdxUnsignedByte = 0x08;

struct IdxFile {
  uint32_t magic = 0;           // e.g. 0x00000803 for (count, rows, cols) bytes
  std::vector<uint32_t> dims;   // sizes, outermost first
  std::vector<uint8_t> data;    // product(dims) bytes, row-major
};

// Reads `path` (gzip or plain) and validates it: magic of unsigned-byte type, `expected_dims` dimensions
// (0: any count from 1 to 4), non-zero sizes, a payload of exactly product(dims) bytes and an intact gzip
// stream. Throws DataError whose where() is `path`.
IdxFile read_idx(const std::string& path, int expected_dims = 0);

}  // namespace dp
