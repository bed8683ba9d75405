// The in-process transport: N ranks as N threads of one process, exchanging messages through shared
// mailboxes with MPI's matching rules (by source and tag, in order). For tests of the collective
// algorithms at any rank count without MPI, and for simulating ranks on one machine. Host memory only.
#pragma once

#include <functional>

#include "lib/comm/communicator.h"

namespace dp {

// Runs fn(comm) on n threads, each with its own rank of one n-rank communicator, and returns when all
// have returned. The first exception a rank throws aborts the group (ranks blocked in a wait, or posting
// a message later, throw RuntimeFailure) and is rethrown here once every thread has ended. When every
// running rank waits for a message that no one will send, the group is aborted as a deadlock, so a
// failed or buggy rank never hangs the others.
void run_thread_ranks(int n, const std::function<void(Communicator&)>& fn);

}  // namespace dp
