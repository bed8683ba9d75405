// printf's formatting into a std::string, for reports whose rows are printf formats (the tables of
// `dptrain plan`): moved from stdout into a string, they keep every byte.
#pragma once

#include <string>

namespace dp {

// The text printf(format, ...) prints.
std::string printf_string(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace dp
