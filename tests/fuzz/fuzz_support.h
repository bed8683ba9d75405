// Shared by the fuzz targets (tests/fuzz/fuzz_*.cpp): the input as a per-process temporary file for readers
// that take a path, and FUZZ_CHECK for a broken promise of a reader that returned (a finding, like a crash).
// Expected errors (dp::InputError and its subclasses) are caught by each target and passed to rejected();
// anything else escapes.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "lib/core/error.h"

namespace fuzz {

// A file under the temporary folder, one per process and name, overwritten by every input and removed
// at exit.
class TempFile {
 public:
  explicit TempFile(const std::string& name)
      : path_((std::filesystem::temp_directory_path() /
               ("dptrain-fuzz-" + std::to_string(::getpid()) + "-" + name)).string()) {}
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  const std::string& write(const uint8_t* data, size_t size) const {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
    if (!out.flush()) {
      std::fprintf(stderr, "fuzz: cannot write %s\n", path_.c_str());
      std::abort();
    }
    return path_;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// An input the reader refused with an expected error. With DPTRAIN_FUZZ_VERBOSE set, prints the error's
// line: how to check that seeds are accepted (or refused for the reason meant).
inline void rejected(const dp::InputError& e) {
  static const bool verbose = std::getenv("DPTRAIN_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "rejected: %s\n", e.line().c_str());
}

}  // namespace fuzz

// A promise the reader broke on an input it accepted: reported and aborted, so libFuzzer keeps the input.
#define FUZZ_CHECK(cond, what)                                                               \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      std::fprintf(stderr, "fuzz finding: %s:%d: %s: %s\n", __FILE__, __LINE__, #cond,       \
                   std::string(what).c_str());                                               \
      std::abort();                                                                          \
    }                                                                                        \
  } while (0)
