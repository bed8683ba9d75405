// A contiguous range of a model's flat parameter (and gradient) buffer: a layer's, a slice of one, or a
// communication bucket's.
#pragma once

#include <cstdint>

namespace dp {

struct ParamRange {
  int64_t offset = 0, count = 0;
  int64_t end() const { return offset + count; }
  bool operator==(const ParamRange&) const = default;
};

}  // namespace dp
