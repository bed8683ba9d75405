// Fuzz target: dptrain's own layer profile (TOML; read_block_profile, lib/pipeline/block_profile.cpp).
// Bad files must be a ProfileError (an InputError); a profile that reads keeps the promises of profile.h:
// finite times and sizes at least 0, a whole micro_batch >= 1, blocks, and shares_weights_with naming a
// block (or -1).
#include <cmath>
#include <cstdint>
#include <string>

#include "lib/core/error.h"
#include "lib/pipeline/profile.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

bool good(double v) { return std::isfinite(v) && v >= 0; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fuzz::TempFile file("profile.toml");
  const std::string& path = file.write(data, size);
  dp::pipeline::is_block_profile(path);
  dp::pipeline::BlockProfile p;
  try {
    p = dp::pipeline::read_block_profile(path);
  } catch (const dp::InputError& e) {
    fuzz::rejected(e);
    return 0;
  }
  FUZZ_CHECK(p.micro_batch >= 1, "micro_batch below 1");
  FUZZ_CHECK(good(p.input_bytes), "input_bytes not finite or negative");
  FUZZ_CHECK(!p.blocks.empty(), "a profile without blocks");
  const int n = int(p.blocks.size());
  for (const dp::pipeline::BlockRow& b : p.blocks) {
    for (double v : {b.forward_ms, b.backward_ms, b.forward_fixed_ms, b.backward_fixed_ms, b.update_ms,
                     b.output_bytes, b.saved_bytes, b.work_bytes, b.param_bytes})
      FUZZ_CHECK(good(v), "block " + b.name + ": a time or size not finite or negative");
    FUZZ_CHECK(b.forward_fixed_ms <= b.forward_ms && b.backward_fixed_ms <= b.backward_ms,
               "block " + b.name + ": a fixed part above the whole time");
    FUZZ_CHECK(b.shares_weights_with >= -1 && b.shares_weights_with < n,
               "block " + b.name + ": shares_weights_with names no block");
  }
  return 0;
}
