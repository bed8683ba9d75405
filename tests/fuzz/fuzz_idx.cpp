// Fuzz target: IDX files, gzip or plain (read_idx, lib/data/idx.cpp). Bad files must be a DataError; a file
// that reads has 1 to 4 non-zero dimensions and exactly their product of bytes. A large size in the header
// must not allocate more than the file could hold (libFuzzer's -malloc_limit_mb reports it).
#include <cstdint>
#include <string>

#include "lib/core/error.h"
#include "lib/data/idx.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fuzz::TempFile file("images.idx");
  const std::string& path = file.write(data, size);
  dp::IdxFile idx;
  try {
    idx = dp::read_idx(path);
  } catch (const dp::InputError& e) {
    fuzz::rejected(e);
    return 0;
  }
  FUZZ_CHECK(!idx.dims.empty() && idx.dims.size() <= 4, "dimensions outside 1 to 4");
  uint64_t total = 1;
  for (uint32_t d : idx.dims) {
    FUZZ_CHECK(d > 0, "a dimension of size 0");
    total *= d;
  }
  FUZZ_CHECK(idx.data.size() == total, "a payload of another size than the dimensions' product");
  return 0;
}
