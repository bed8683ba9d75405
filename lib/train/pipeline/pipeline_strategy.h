// Strategy "pipeline": the model's blocks in stages, 1F1B (pipeline_strategy.cpp).
// Its entry in the strategy registry (lib/train/registry.h).
#pragma once

#include "lib/train/registry.h"

namespace dp {

StrategyEntry pipeline_strategy_entry();

}  // namespace dp
