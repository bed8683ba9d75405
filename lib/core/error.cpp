// Formatting of dptrain's typed errors.
#include "lib/core/error.h"

#include <cstring>

namespace dp {

static std::string compose(const std::string& where, const std::string& what, const std::string& hint) {
  std::string s = where.empty() ? std::string("error: ") : where + ": error: ";
  s += what;
  if (!hint.empty()) s += " (hint: " + hint + ")";
  return s;
}

Error::Error(std::string where, std::string what, std::string hint)
    : std::runtime_error(compose(where, what, hint)),
      where_(std::move(where)),
      message_(std::move(what)),
      hint_(std::move(hint)) {}

std::string Error::line() const { return std::runtime_error::what(); }

std::string source_location(const char* file, int line) {
  const char* base = std::strrchr(file, '/');
  return std::string(base ? base + 1 : file) + ":" + std::to_string(line);
}

}  // namespace dp
