// Strategy "cgp"'s own metrics.jsonl lines (serialised here, written through StepSink::record): a
// regrouping decision ("regroup"), every group's times per phase ("groups"), and the group fields of its
// ranks' "train" lines.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dp {

// Strategy "cgp": a regrouping decision (adopted or not) and what it cost.
struct RegroupLine {
  int64_t step = 0;
  std::string grouping, reason;
  double predicted_before = 0, predicted_after = 0;  // samples/s of the old and the new grouping
  bool adopted = false;
  double cost_ms = 0;  // from the pause to training again (solve, communicators, state)
};

// Strategy "cgp", at the end of each phase: every group's times as the model predicts them from the
// speeds measured in the phase, and as they were measured (milliseconds, samples per second).
struct GroupTimesLine {
  double step_ms = 0, exchange_ms = 0, held_ms = 0, cycle_ms = 0, samples_per_sec = 0, staleness = 0;
};
struct PhaseGroupsLine {
  int64_t step = 0;  // the phase ended after this step
  std::string grouping;
  struct Group {
    std::vector<int> members;
    GroupTimesLine predicted, measured;
  };
  std::vector<Group> groups;
  double predicted_samples_per_sec = 0, measured_samples_per_sec = 0;
};

// The JSON objects of those lines, without "t".
std::string json_line(const RegroupLine& l);
std::string json_line(const PhaseGroupsLine& l);
// A rank's "train" line fields (TrainLine::strategy_fields): its group, the staleness its group's update
// was applied with, how long the server held the complete request (staleness bound or turn) and the
// rank's exchange time (request to global model in hand).
std::string group_fields(int group, double staleness, double held_ms, double exchange_ms);

}  // namespace dp
