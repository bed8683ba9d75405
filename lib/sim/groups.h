// Asynchronous groups against one server, played as events (sim.h): what CGP's groups and CGP of
// pipelines' groups share. A group does its local work (the caller's: local steps, or pipeline
// mini-batches), then exchanges: the server's interface serves one group's exchange at a time (first come,
// first served; its pushes, then the global values pulled back; a group that moves nothing over the
// network, on the server's own ranks, does not queue), the update is applied when the runtime's
// hold allows (no other group, not itself waiting, may have seen `bound` updates since its read; the
// waiting updates oldest read first, as the runtime's server takes them), and
// the group's next local work starts after the pull and its members' all-gather. An update's staleness
// is the number of other groups' updates applied since the group last read the global model.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "lib/sim/sim.h"

namespace dp::sim {

struct ServerGroup {
  double push = 0, pull = 0, latency = 0, gather = 0;  // one exchange's terms
  int64_t samples = 0;                                  // what one exchange lands (its local work's samples)
};

// Group g's local work begun at `t` ends at the returned time; `step` is the global step the landed samples
// reach (for the slowness of that step); `events` counts what it simulated.
using LocalWork = std::function<double(size_t g, double t, int64_t step, int64_t& events)>;

// Until `steps` global batches have landed. One group is plain synchronous training: no server.
Result play_groups(const std::vector<ServerGroup>& groups, const LocalWork& local, int64_t bound,
                   int64_t global_batch, int64_t steps);

}  // namespace dp::sim
