// trace.json: every rank's events (lib/core/trace.h) gathered to rank 0 and written as one file.
#include "lib/train/run_trace.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "lib/train/run_dir.h"

namespace dp {
namespace {

constexpr int kTraceTag = 960;  // rank -> rank 0: its events (below kCollectiveTag, unused elsewhere)
constexpr int kPingTag = 961, kPongTag = 962;  // the clock offsets

int64_t ns_of(trace_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

int64_t complete_events(const Tracer& tracer) {
  int64_t n = 0;
  for (const TraceTrack* t : tracer.tracks()) n += int64_t(t->events().size());
  return n;
}

}  // namespace

std::unique_ptr<Tracer> make_run_tracer(const Job& job, const Communicator& comm) {
  if (!job.log.trace) return nullptr;
  TraceOptions o;
  o.enabled = true;
  o.first_step = job.log.trace_first;
  o.steps = job.log.trace_steps;
  return std::make_unique<Tracer>(o, comm.rank(), comm.host());
}

trace_clock::time_point agreed_trace_origin(Communicator& comm) {
  comm.barrier();
  int64_t origin = ns_of(trace_clock::now());  // rank 0's clock
  comm.broadcast(std::as_writable_bytes(std::span(&origin, 1)), 0);
  int64_t offset = 0;  // rank 0's clock minus this rank's
  constexpr int kRounds = 8;
  for (int r = 1; r < comm.size(); ++r) {
    int64_t best_rtt = INT64_MAX;
    for (int round = 0; round < kRounds; ++round) {
      int64_t ping = 0, pong = 0;
      if (comm.rank() == r) {
        const int64_t sent = ns_of(trace_clock::now());
        comm.isend(std::as_bytes(std::span(&ping, 1)), 0, kPingTag).wait();
        comm.irecv(std::as_writable_bytes(std::span(&pong, 1)), 0, kPongTag).wait();
        const int64_t back = ns_of(trace_clock::now());
        if (back - sent < best_rtt) {
          best_rtt = back - sent;
          offset = pong + best_rtt / 2 - back;
        }
      } else if (comm.rank() == 0) {
        comm.irecv(std::as_writable_bytes(std::span(&ping, 1)), r, kPingTag).wait();
        pong = ns_of(trace_clock::now());
        comm.isend(std::as_bytes(std::span(&pong, 1)), r, kPongTag).wait();
      }
    }
  }
  return trace_clock::time_point(std::chrono::duration_cast<trace_clock::duration>(
      std::chrono::nanoseconds(origin - offset)));
}

int64_t write_run_trace(const Tracer& tracer, Communicator& comm, const std::string& path) {
  const std::string mine = trace_events_json(tracer);
  struct Sizes {
    int64_t bytes, events;
  };
  const std::vector<Sizes> sizes = comm.allgather_value(Sizes{int64_t(mine.size()), complete_events(tracer)});
  if (comm.rank() != 0) {
    comm.isend(std::as_bytes(std::span(mine)), 0, kTraceTag).wait();
    return 0;
  }
  std::string out = R"({"traceEvents":[)" + mine;
  int64_t events = 0;
  for (int r = 0; r < comm.size(); ++r) {
    events += sizes[size_t(r)].events;
    if (r == 0) continue;
    std::string theirs(size_t(sizes[size_t(r)].bytes), '\0');
    comm.irecv(std::as_writable_bytes(std::span(theirs)), r, kTraceTag).wait();
    out += "," + theirs;
  }
  const TraceOptions& o = tracer.options();
  out += fmt::format(R"(],"displayTimeUnit":"ms","otherData":{{"producer":"dptrain {}","ranks":{},)"
                     R"("trace_first":{},"trace_steps":{},"clock":"microseconds since rank 0 left the barrier )"
                     R"(before the first step; every rank's steady clock offset to rank 0's by ping-pong"}}}})",
                     DPTRAIN_VERSION, comm.size(), o.first_step, o.steps);
  out += "\n";
  write_file_atomic(path, out);
  return events;
}

}  // namespace dp
