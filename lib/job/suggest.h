// Did-you-mean suggestions for misspelt keys, tables and enumerated values (Levenshtein distance).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace dp::job_detail {

// Edit distance (insertions, deletions, substitutions), case-insensitive.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `word` when it is reasonably close (distance <= max(2, len/3)); empty otherwise.
std::string closest(std::string_view word, const std::vector<std::string>& candidates);

// The text in lower case (ASCII): device names are compared this way ("H200" is "h200").
std::string lowercase(std::string_view s);

// "a, b, c"
std::string join(const std::vector<std::string>& items, std::string_view sep = ", ");

}  // namespace dp::job_detail
