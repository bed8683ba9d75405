// JSON helpers (json.h).
#include "lib/core/json.h"

#include <fmt/format.h>

namespace dp {

std::string json_quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", int(c));
    else out += c;
  }
  return out + "\"";
}

std::string json_ints(const std::vector<int>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) s += ',';
    s += std::to_string(v[i]);
  }
  return s + ']';
}

}  // namespace dp
