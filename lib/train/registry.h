// Every training strategy's runtime: the one table that knows them (registry.cpp). A strategy's folder
// (lib/train/data/, cgp/, pipeline/) provides its entry: the value of [parallel] strategy that selects it,
// the checks of a job that can run before ranks start, and the factory the trainer calls on every rank.
//
// A new strategy adds its folder (a Strategy; SyncLoop from step/sync_step.h when its steps are
// synchronous; its own metrics lines through StepSink::record) and its line in registry.cpp. Outside
// lib/train, which the job schema cannot see: its enumerator and name in lib/job/job_enums.h
// (StrategyKind), its section in man/dptrain-job.5 and the completions' value lists
// (tests/cli/docs_in_step.sh checks those against the names), and the two switches over StrategyKind the
// compiler then names (-Wswitch): `dptrain estimate`'s model of its ranks (lib/estimate/estimate.cpp) and
// `dptrain plan`'s planner (apps/dptrain/cmd_plan.cpp).
#pragma once

#include <memory>
#include <span>

#include "lib/job/job.h"
#include "lib/train/strategy.h"
#include "models/model.h"

namespace dp {

struct StrategyEntry {
  StrategyKind kind;  // [parallel] strategy
  // Before ranks start (dptrain run's checks): what only this strategy requires of the job and model.
  // Throws InputError subclasses. Null: nothing beyond the job's own checks.
  void (*check_job)(const Job& job, const Model& model) = nullptr;
  std::unique_ptr<Strategy> (*make)(StrategyInputs in) = nullptr;  // every rank, collectively
  // Whether the model it is given holds the whole model's parameters (false: it is built without them,
  // Model::holds_parameters, and the strategy holds the parts it trains).
  bool whole_model = true;
  // Whether its ranks resume reading only what they hold (a checkpoint's manifest, read_checkpoint_manifest,
  // then each rank its ranges) rather than every value (read_checkpoint).
  bool reads_own_ranges = false;
};

// Every strategy, in the order the documentation lists them.
std::span<const StrategyEntry> strategies();
// The entry of `kind`; a kind without one is an InternalError.
const StrategyEntry& strategy_entry(StrategyKind kind);

}  // namespace dp
