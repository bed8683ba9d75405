// Reader of gzip (or plain) IDX files with strict validation: magic, dimensions, exact payload length,
// gzip integrity. Every error names the file.
#include "lib/data/idx.h"
#include "lib/data/files.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "lib/core/error.h"

namespace dp {
namespace {

constexpr int kMaxDims = 4;
constexpr uint64_t kMaxPayload = uint64_t(1) << 32;  // 4 GiB: far beyond any dataset dptrain reads
constexpr unsigned kChunk = 1u << 24;                 // gzread takes an unsigned length; read in chunks
constexpr uint64_t kGrowStep = uint64_t(1) << 22;     // the payload buffer grows by at most 4 MiB a read
const char* const kDamagedHint = kDamagedFileHint;

// Reads up to `len` bytes; returns how many were read. Throws on a gzip/IO error.
uint64_t read_some(gzFile f, const std::string& path, uint8_t* out, uint64_t len) {
  uint64_t got = 0;
  while (got < len) {
    const unsigned want = unsigned(std::min<uint64_t>(kChunk, len - got));
    const int n = gzread(f, out + got, want);
    if (n < 0) throw DataError(path, gz_message(f, path), kDamagedHint);
    if (n == 0) {
      // End of input; a stream cut short inside the compressed data reports a (non-fatal) buffer error.
      int code = 0;
      gzerror(f, &code);
      if (code != Z_OK && code != Z_STREAM_END)
        throw DataError(path, gz_message(f, path), kDamagedHint);
      break;
    }
    got += uint64_t(n);
  }
  return got;
}

uint32_t big_endian(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

}  // namespace

IdxFile read_idx(const std::string& path, int expected_dims) {
  const int64_t available = check_data_file(path, 1, "point [data] path at the folder of the IDX files");
  errno = 0;
  GzPtr f(gzopen(path.c_str(), "rb"));
  if (!f)
    throw DataError(path, fmt::format("cannot open: {}", errno ? std::strerror(errno) : "out of memory"));
  gzbuffer(f.get(), 1u << 20);

  IdxFile idx;
  uint8_t header[4];
  if (read_some(f.get(), path, header, 4) != 4)
    throw DataError(path, "truncated: the file ends inside the 4-byte IDX header", kDamagedHint);
  idx.magic = big_endian(header);
  const int ndims = header[3];
  if (header[0] != 0 || header[1] != 0 || header[2] != kIdxUnsignedByte || ndims < 1 || ndims > kMaxDims)
    throw DataError(path, fmt::format("bad IDX magic 0x{:08x}: expected 0x000008NN (unsigned bytes, NN "
                                      "dimensions from 1 to {})", idx.magic, kMaxDims),
                    "this is not an IDX file of unsigned bytes");
  if (expected_dims > 0 && ndims != expected_dims)
    throw DataError(path, fmt::format("bad IDX magic 0x{:08x}: {} dimensions, expected {} (magic 0x{:08x})",
                                      idx.magic, ndims, expected_dims, 0x800u | unsigned(expected_dims)),
                    "the file holds a different kind of array; check the file name");

  std::vector<uint8_t> dim_bytes(size_t(ndims) * 4);
  if (read_some(f.get(), path, dim_bytes.data(), dim_bytes.size()) != dim_bytes.size())
    throw DataError(path, fmt::format("truncated: the file ends inside the {} dimension sizes", ndims),
                    kDamagedHint);
  uint64_t total = 1;
  for (int i = 0; i < ndims; ++i) {
    const uint32_t d = big_endian(&dim_bytes[size_t(i) * 4]);
    if (d == 0) throw DataError(path, fmt::format("bad IDX header: dimension {} has size 0", i));
    total *= d;
    if (total > kMaxPayload)
      throw DataError(path, fmt::format("bad IDX header: more than {} elements", kMaxPayload),
                      kDamagedHint);
    idx.dims.push_back(d);
  }

  if (available >= 0 && total > uint64_t(available))
    throw DataError(path, fmt::format("bad IDX header: {} bytes of data, more than this machine's available memory",
                                      total), kDamagedHint);
  // The payload grows as it arrives: a header that claims more than the file holds costs no more memory
  // than the file's own bytes (plus one step) before it is reported as truncated.
  while (idx.data.size() < total) {
    const size_t at = idx.data.size();
    const size_t want = size_t(std::min<uint64_t>(kGrowStep, total - at));
    idx.data.resize(at + want);
    const uint64_t got = read_some(f.get(), path, idx.data.data() + at, want);
    idx.data.resize(at + size_t(got));
    if (got < want) break;
  }
  if (idx.data.size() != total)
    throw DataError(path, fmt::format("truncated: expected {} bytes of data, found {}", total, idx.data.size()),
                    kDamagedHint);
  // Anything after the payload (and, for gzip, the stream's CRC check) must be clean end of file.
  uint8_t extra[64];
  const uint64_t more = read_some(f.get(), path, extra, sizeof extra);
  if (more != 0)
    throw DataError(path, fmt::format("trailing data: more than the {} bytes of data the header declares",
                                      total), kDamagedHint);
  return idx;
}

}  // namespace dp
