// Fuzz target: PipeDream's graph.txt profile format (read_pipedream_graph, lib/pipeline/pipedream_graph.cpp).
// Bad files must be an InputError naming the line; a graph that reads keeps the promises of profile.h:
// blocks, one boundary fewer than blocks, finite times and sizes at least 0.
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
  static const fuzz::TempFile file("graph.txt");
  const std::string& path = file.write(data, size);
  dp::pipeline::LayerProfile p;
  try {
    p = dp::pipeline::read_pipedream_graph(path);
  } catch (const dp::InputError& e) {
    fuzz::rejected(e);
    return 0;
  }
  FUZZ_CHECK(!p.blocks.empty(), "a profile without blocks");
  FUZZ_CHECK(p.boundary_bytes.size() + 1 == p.blocks.size(), "not one boundary fewer than blocks");
  FUZZ_CHECK(good(p.input_bytes), "input bytes not finite or negative");
  for (const dp::pipeline::ProfiledBlock& b : p.blocks)
    for (double v : {b.forward_ms, b.backward_ms, b.output_bytes, b.param_bytes})
      FUZZ_CHECK(good(v), "node " + b.id + ": a time or size not finite or negative");
  for (double v : p.boundary_bytes) FUZZ_CHECK(good(v), "boundary bytes not finite or negative");
  return 0;
}
