// The run's timeline (trace.json): the trainer's side of lib/core/trace.h. Every rank records its own
// events; at the end rank 0 gathers them and writes one Chrome trace event file for Perfetto.
#pragma once

#include <memory>
#include <string>

#include "lib/comm/communicator.h"
#include "lib/core/trace.h"
#include "lib/job/job.h"

namespace dp {

// This rank's tracer under [log] trace, trace_first and trace_steps (null when trace is off).
std::unique_ptr<Tracer> make_run_tracer(const Job& job, const Communicator& comm);

// The instant, on this rank's steady clock, that is rank 0's clock right after a barrier of all ranks:
// every rank then writes times on one time line (tracks line up across ranks and hosts). Each rank finds
// the offset of its clock from rank 0's by ping-pong (the round trip of 8 with the least delay; half of
// it assumed each way, as NTP does); ranks of one host share the clock, so theirs is then about 0.
// Collective over `comm`.
trace_clock::time_point agreed_trace_origin(Communicator& comm);

// Every rank's events to rank 0, which writes `path` (atomically): {"traceEvents": [...],
// "displayTimeUnit": "ms", "otherData": {...}}. Collective; returns the number of complete events
// written (on rank 0; 0 elsewhere).
int64_t write_run_trace(const Tracer& tracer, Communicator& comm, const std::string& path);

}  // namespace dp
