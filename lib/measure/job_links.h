// The network a job emulates ([cluster.emulate]): the launched communicator wrapped so that every
// message is paced as on the links the job describes, and the line that says so in a run's log.
#pragma once

#include <memory>
#include <string>

#include "lib/comm/communicator.h"
#include "lib/job/job.h"

namespace dp {

// `launched` paced as [cluster.emulate] says: with as_described, every pair of ranks linked as [cluster]
// describes (the launch must have [launch] ranks); else link_gbps / link_latency_us; null when none.
std::unique_ptr<Communicator> paced_by_job_links(const Job& job, Communicator& launched);
// The emulated network, for the run's first lines ("" when none).
std::string links_text(const Job& job);

}  // namespace dp
