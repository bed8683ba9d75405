// What a model consumes: the shape of one sample, and a batch of samples as views into buffers. Shared
// by lib/data (which fills batches) and models/ (which read them), so neither depends on the other.
#pragma once

#include <cstdint>

namespace dp {

// The shape of one sample of a dataset.
struct SampleShape {
  int64_t features = 0;  // floats per sample (vector and image data); 0 for text
  int64_t classes = 0;   // label classes, or vocabulary size for text
  int64_t channels = 0, height = 0, width = 0;  // image data (features = channels * height * width)
  int64_t context = 0;   // tokens per sample for text (targets are the next tokens)
  bool is_image() const { return channels > 0 && height > 0 && width > 0; }
  bool is_text() const { return context > 0; }
};

// n samples; exactly one of x (vector/image models) and tokens (language models) is set.
struct Batch {
  int64_t n = 0;
  const float* x = nullptr;          // (n, features)
  const int32_t* tokens = nullptr;   // (n, context)
  const int32_t* targets = nullptr;  // (n) labels, or (n, context) next tokens
};

}  // namespace dp
