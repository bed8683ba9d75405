// Every training strategy, by name: the one table that knows them (registry.cpp). A strategy's folder
// (lib/train/data/, cgp/, pipeline/) provides its entry: the name [parallel] strategy selects it by, the
// checks of a job that can run before ranks start, and the factory the trainer calls on every rank.
//
// A new strategy adds its folder (a Strategy; SyncLoop from step/sync_step.h when its steps are
// synchronous; its own metrics lines through StepSink::record) and its line in registry.cpp. Outside
// lib/train, which the job schema cannot see, its name goes in lib/job/schema.cpp's kStrategies, its
// section in man/dptrain-job.5 and the completions' value lists (tests/cli/docs_in_step.sh checks those
// three against each other), and, for `dptrain estimate`, a model of its ranks in lib/estimate.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "lib/job/job.h"
#include "lib/train/strategy.h"
#include "models/model.h"

namespace dp {

struct StrategyEntry {
  std::string_view name;  // [parallel] strategy
  // Before ranks start (dptrain run's checks): what only this strategy requires of the job and model.
  // Throws InputError subclasses. Null: nothing beyond the job's own checks.
  void (*check_job)(const Job& job, const Model& model) = nullptr;
  std::unique_ptr<Strategy> (*make)(StrategyInputs in) = nullptr;  // every rank, collectively
};

// Every strategy, in the order the documentation lists them.
std::span<const StrategyEntry> strategies();
// The entry of `name`; an unknown name (lib/job validates it first) is an InternalError.
const StrategyEntry& strategy_named(std::string_view name);

}  // namespace dp
