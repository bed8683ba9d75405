// Strategy "cgp": groups synchronous inside, asynchronous between (cgp_strategy.cpp).
// Its entry in the strategy registry (lib/train/registry.h).
#pragma once

#include "lib/train/registry.h"

namespace dp {

StrategyEntry cgp_strategy_entry();

}  // namespace dp
