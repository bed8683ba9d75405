// The skips and failures of a running Boost.Test module, counted by its main() (tests/main_with_skips.cpp),
// which exits 77 (CTest: Skipped) when a case was skipped and nothing failed. Under mpirun the ranks must
// agree first, or one rank's skip could hide another's failure (mpirun reports the lowest rank's non-zero
// exit code): an MPI test's global fixture calls agree_across_ranks while MPI is still up.
#pragma once

#include <span>

namespace test_skips {

struct Tally {
  int skipped = 0;  // test units skipped because a precondition did not hold (not those a filter left out)
  int failed = 0;   // failed assertions, uncaught exceptions, aborted or timed-out units
};

// This process's tally so far.
Tally& tally();

// Replaces every rank's tally with the sums over the ranks of `comm` (a dp::Communicator; collective).
template <class Communicator>
void agree_across_ranks(Communicator& comm) {
  double sums[2] = {double(tally().skipped), double(tally().failed)};
  comm.allreduce_sum(std::span<double>(sums));
  tally() = {int(sums[0]), int(sums[1])};
}

}  // namespace test_skips
