// The fuzz targets' main for builds without libFuzzer (the normal gcc build, CI): feeds every file of the
// folders (or files) on the command line to LLVMFuzzerTestOneInput once, so that the seed corpus and every
// crash input found earlier are re-checked by CTest. An input that crashes, aborts or throws anything but
// the expected errors ends the run with that failure; an empty run (no files at all) fails too. Like
// libFuzzer's -malloc_limit_mb, memory is capped (1 GiB of address space), so that an allocation sized by
// a header's claim fails (std::bad_alloc, which no target catches) instead of passing on a big machine.
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<uint8_t> contents(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

int main(int argc, char** argv) {
  constexpr rlim_t kMemoryCap = rlim_t(1) << 30;
  const rlimit cap{kMemoryCap, kMemoryCap};
  if (setrlimit(RLIMIT_AS, &cap) != 0) std::perror("replay: setrlimit");
  std::vector<std::filesystem::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    if (std::filesystem::is_directory(arg)) {
      for (const auto& e : std::filesystem::directory_iterator(arg))
        if (e.is_regular_file()) inputs.push_back(e.path());
    } else if (std::filesystem::is_regular_file(arg)) {
      inputs.push_back(arg);
    } else {
      std::fprintf(stderr, "replay: %s is neither a folder nor a file\n", argv[i]);
      return 2;
    }
  }
  std::sort(inputs.begin(), inputs.end());
  if (inputs.empty()) {
    std::fprintf(stderr, "replay: no input files under the given paths\n");
    return 2;
  }
  for (const auto& p : inputs) {
    std::fprintf(stderr, "replay: %s\n", p.string().c_str());
    const std::vector<uint8_t> data = contents(p);
    LLVMFuzzerTestOneInput(data.data(), data.size());
  }
  std::printf("replay: %zu inputs, all handled\n", inputs.size());
  return 0;
}
