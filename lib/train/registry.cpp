// The strategy table: one line per strategy (see registry.h).
#include "lib/train/registry.h"

#include <string>

#include "lib/core/error.h"
#include "lib/train/cgp/cgp_strategy.h"
#include "lib/train/data/data_strategy.h"
#include "lib/train/hybrid/hybrid_strategy.h"
#include "lib/train/pipeline/pipeline_strategy.h"

namespace dp {

std::span<const StrategyEntry> strategies() {
  static const StrategyEntry table[] = {
      data_strategy_entry(),
      cgp_strategy_entry(),
      pipeline_strategy_entry(),
      cgp_pipeline_strategy_entry(),
  };
  return table;
}

const StrategyEntry& strategy_entry(StrategyKind kind) {
  for (const StrategyEntry& e : strategies())
    if (e.kind == kind) return e;
  throw InternalError(source_location(__FILE__, __LINE__),
                      "strategy '" + name_of(kind) + "' has no line in lib/train/registry.cpp");
}

}  // namespace dp
