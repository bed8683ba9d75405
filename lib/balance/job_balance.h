// I-DAT's options as a job sets them ([parallel.balance], with [cluster]'s described speeds as the first
// division when the job gives none), and a division as the log prints it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/balance/balance.h"
#include "lib/job/job.h"

namespace dp {

BalanceOptions balance_options(const Job& job, int world);
std::string shares_text(const std::vector<int64_t>& shares);  // "43 85"

}  // namespace dp
