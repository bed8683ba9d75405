// OpenMPI hostfiles ([launch] hostfile): one machine per line, "name [slots=N] [max_slots=N]", '#'
// comments and blank lines. Read and checked before any rank starts, so a typo is one line naming the
// file and line instead of an mpirun failure on some machine.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dp {

struct HostfileEntry {
  std::string host;
  int64_t slots = 0;      // 0: not given (mpirun counts the machine's cores)
  int64_t max_slots = 0;  // 0: not given
};

// Parses a hostfile's text; `path` names it in errors. Throws UsageError ("PATH:LINE") for an unknown
// or malformed field, a repeated host, or a file naming no machine.
std::vector<HostfileEntry> parse_hostfile(std::string_view text, const std::string& path);

// Reads and parses the file. Throws UsageError when it cannot be read or does not parse.
std::vector<HostfileEntry> read_hostfile(const std::string& path);

}  // namespace dp
