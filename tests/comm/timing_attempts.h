// Timed checks on a shared machine: a measurement that other work on the machine can only slow down
// (pacing never delivers early) is repeated up to `attempts` times, and the check holds when one
// attempt meets every bound. Lower bounds that no load can break are checked on every attempt by the
// caller; what retrying covers is the side a busy machine blurs (ratios, upper bounds, medians).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace dp::testing {

// Runs `attempt` (which returns what missed its bounds, empty when none did) until one attempt misses
// nothing or `attempts` have run. Empty when one attempt met every bound; otherwise the misses of every
// attempt, each prefixed with its number, so that a failure shows every try.
inline std::vector<std::string> misses_of_best_attempt(int attempts,
                                                       const std::function<std::vector<std::string>()>& attempt) {
  std::vector<std::string> all;
  for (int i = 1; i <= attempts; ++i) {
    const std::vector<std::string> missed = attempt();
    if (missed.empty()) return {};
    for (const auto& m : missed) all.push_back("attempt " + std::to_string(i) + ": " + m);
  }
  return all;
}

inline std::string joined(const std::vector<std::string>& lines) {
  std::string t;
  for (const auto& l : lines) t += "\n  " + l;
  return t;
}

}  // namespace dp::testing
