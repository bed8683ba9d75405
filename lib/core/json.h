// Small helpers for the JSON that dptrain prints (plan --json, summary.json, metrics.jsonl): a string
// quoted and escaped, and an array of integers.
#pragma once

#include <string>
#include <vector>

namespace dp {

// "s" with quotes and backslashes escaped and control characters as \u00XX.
std::string json_quoted(const std::string& s);
// [1,2,3]
std::string json_ints(const std::vector<int>& v);

}  // namespace dp
