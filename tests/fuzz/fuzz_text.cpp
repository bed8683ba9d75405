// Fuzz target: the text dataset reader (load_text, lib/data/text.cpp): strict UTF-8, gzip or plain, split
// into train and validation windows. Bad files must be a DataError; a text that loads has tokens inside
// its vocabulary and at least one window per split.
#include <cstdint>
#include <string>

#include "lib/core/error.h"
#include "lib/data/dataset.h"
#include "lib/data/loaders.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

void check_split(const dp::Dataset& d) {
  FUZZ_CHECK(d.count >= 1, "a split without a window");
  FUZZ_CHECK(int64_t(d.vocab.size()) == d.classes, "classes differ from the vocabulary");
  for (int32_t t : d.text) FUZZ_CHECK(t >= 0 && t < d.classes, "a token outside the vocabulary");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fuzz::TempFile file("text.txt");
  dp::DataSection section;
  section.dataset = dp::DatasetKind::text;
  section.path = file.write(data, size);
  section.context = 8;
  section.val_fraction = 0.25;
  dp::DatasetSplits s;
  try {
    s = dp::load_text(section);
  } catch (const dp::InputError& e) {
    fuzz::rejected(e);
    return 0;
  }
  check_split(s.train);
  check_split(s.test);
  return 0;
}
