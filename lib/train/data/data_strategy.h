// Strategy "data": synchronous data parallelism over all ranks (data_strategy.cpp).
// Its entry in the strategy registry (lib/train/registry.h).
#pragma once

#include "lib/train/registry.h"

namespace dp {

StrategyEntry data_strategy_entry();

}  // namespace dp
