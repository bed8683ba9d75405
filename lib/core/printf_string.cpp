// printf_string (printf_string.h): vsnprintf sized by a first pass.
#include "lib/core/printf_string.h"

#include <cstdarg>
#include <cstdio>

namespace dp {

std::string printf_string(const char* format, ...) {
  va_list args, again;
  va_start(args, format);
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string out(size_t(n > 0 ? n : 0), '\0');
  if (n > 0) std::vsnprintf(out.data(), out.size() + 1, format, again);
  va_end(again);
  return out;
}

}  // namespace dp
