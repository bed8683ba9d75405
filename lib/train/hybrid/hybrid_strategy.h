// Strategy "cgp-pipeline": CGP whose groups are pipelines (hybrid_strategy.cpp).
// Its entry in the strategy registry (lib/train/registry.h).
#pragma once

#include "lib/train/registry.h"

namespace dp {

StrategyEntry cgp_pipeline_strategy_entry();

}  // namespace dp
