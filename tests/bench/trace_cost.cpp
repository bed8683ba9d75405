// What one trace event costs a thread (lib/core/trace.h): nanoseconds per TraceScope recording (window
// open), outside the window, on a thread with no tracer, and on one the watchdog watches (its progress
// count and activity, lib/train/watchdog.h) with no tracer; min and median of 15 rounds of 50,000 scopes
// each, the four cases interleaved. Run by tests/bench/trace_overhead.sh; prints, asserts nothing.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "lib/core/trace.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kScopes = 50'000, kRounds = 15;

double ns_per_scope() {
  const auto t0 = Clock::now();
  for (int i = 0; i < kScopes; ++i) {
    const dp::TraceScope s("bench", {"i", i});
  }
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / kScopes;
}

}  // namespace

int main() {
  dp::TraceOptions on;
  on.enabled = true;
  on.first_step = 1;
  on.steps = 1;
  on.events_per_track = size_t(kScopes) * kRounds;  // never full: every scope is recorded
  dp::Tracer recording(on, 0, "bench"), closed(on, 0, "bench");
  recording.next_step();  // step 1: its window
  closed.next_step();
  closed.next_step();  // past its one-step window
  std::vector<double> times[4];
  dp::ThreadProgress progress;
  for (int round = 0; round < kRounds; ++round) {
    {
      const dp::TraceThread bound(&recording, "compute");
      times[0].push_back(ns_per_scope());
    }
    {
      const dp::TraceThread bound(&closed, "compute");
      times[1].push_back(ns_per_scope());
    }
    times[2].push_back(ns_per_scope());  // no tracer bound
    dp::watch_this_thread(&progress);
    times[3].push_back(ns_per_scope());
    dp::watch_this_thread(nullptr);
  }
  const char* names[4] = {"recording", "window closed", "no tracer", "watched"};
  for (int c = 0; c < 4; ++c) {
    std::sort(times[c].begin(), times[c].end());
    fmt::print("# trace scope, {:<13}: min {:6.1f} ns, median {:6.1f} ns per event\n", names[c], times[c].front(),
               times[c][times[c].size() / 2]);
  }
  fmt::print("# events recorded: {}\n", recording.tracks()[0]->events().size());
}
