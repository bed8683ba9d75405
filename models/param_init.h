// How a model's parameters start, tensor by tensor: each tensor is a constant, or drawn from a stream of
// its own (normal or uniform), so the values of any range of the flat parameters can be made without the
// rest. A pipeline stage makes only its blocks' (models/stage.h); the whole model is the range of all.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace dp {

struct TensorInit {
  enum class Kind { constant, normal, uniform };
  int64_t offset = 0, count = 0;  // in the model's flat parameters
  Kind kind = Kind::constant;
  double value = 0;   // constant: the value; normal: the standard deviation; uniform: U(-value, value)
  uint64_t seed = 0;  // normal, uniform: the stream's seed
};

// The initial values of parameters [begin, begin + out.size()) into `out`; what no tensor covers is 0.
void fill_initial(std::span<const TensorInit> tensors, int64_t begin, std::span<float> out);

}  // namespace dp
