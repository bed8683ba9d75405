// Watchdog (watchdog.h): heartbeats to rank 0, and the verdict when the job stops making progress.
#include "lib/train/watchdog.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lib/core/error.h"
#include "lib/core/json.h"
#include "lib/train/run_dir.h"

namespace dp {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kBeatTag = 930;
constexpr auto kInterval = std::chrono::milliseconds(500);

// One rank's heartbeat. Trivially copyable.
struct Beat {
  int64_t count = 0;      // TraceScopes its compute thread has entered and left
  int64_t last = 0;       // 1: the rank's final beat (its watchdog is stopping)
  char activity[48] = {};
  char host[64] = {};
};

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

[[noreturn]] void end_job(const std::string& line) {
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
  std::_Exit(Watchdog::kExitStatus);  // the launcher (mpirun, srun) then ends every other rank
}

}  // namespace

Watchdog::Watchdog(Communicator& comm, double timeout_s, std::string beats_path)
    : timeout_s_(timeout_s), beats_path_(std::move(beats_path)) {
  if (timeout_s <= 0) return;
  comm_ = comm.split(0, comm.rank());
  watch_this_thread(&progress_);
  thread_ = std::thread([this] { run(); });
}

Watchdog::~Watchdog() {
  if (!thread_.joinable()) return;
  watch_this_thread(nullptr);
  stop_ = true;
  thread_.join();
  std::error_code ignored;  // the run ended normally: no report will need it
  if (comm_->rank() == 0) std::filesystem::remove(beats_path_, ignored);
  // A communicator freed while a beat is on its way to it crashes Open MPI's next communicator
  // (mca_pml_ob1_add_comm): freed only once every beat was received; else left to MPI_Finalize.
  if (!drained_) (void)comm_.release();
}

void Watchdog::run() {
  Communicator& comm = *comm_;
  const int me = comm.rank(), world = comm.size();
  const auto start = Clock::now();
  const auto timeout = std::chrono::duration<double>(timeout_s_);
  Beat mine;
  std::strncpy(mine.host, comm.host().c_str(), sizeof mine.host - 1);
  // Rank 0: every rank's latest beat, when it came, and when its count last changed.
  std::vector<Beat> beats(static_cast<size_t>(world));
  std::vector<Clock::time_point> heard(size_t(world), start), moved(size_t(world), start);
  std::vector<Beat> incoming(static_cast<size_t>(world));
  std::vector<Request> receives(static_cast<size_t>(world));
  std::vector<bool> posted(size_t(world), false);
  Beat outgoing;
  Request send;
  int64_t my_last = -1;
  auto my_moved = start, last_written = start;
  while (!stop_) {
    std::this_thread::sleep_for(kInterval);
    const auto now = Clock::now();
    mine.count = progress_.count.load(std::memory_order_relaxed);
    std::strncpy(mine.activity, progress_.activity.load(std::memory_order_relaxed), sizeof mine.activity - 1);
    if (mine.count != my_last) my_last = mine.count, my_moved = now;
    if (me != 0) {
      if (send.test()) {  // the last beat has left (or none was sent): the next one
        outgoing = mine;
        send = comm.isend(std::as_bytes(std::span(&outgoing, 1)), 0, kBeatTag);
      }
      if (now - my_moved > 2 * timeout)
        end_job(fmt::format("dptrain: rank {} ({}): no progress for {:.0f} s in '{}' ([launch] wait_timeout {:.0f} s); "
                            "rank 0, which watches the job, has not ended it: it may be the one stopped; ending the job",
                            me, mine.host, seconds(now - my_moved), mine.activity, timeout_s_));
      continue;
    }
    beats[0] = mine;
    heard[0] = now;
    moved[0] = my_moved;
    for (int r = 1; r < world; ++r) {
      Request& rq = receives[size_t(r)];
      if (rq.pending() && !rq.test()) continue;
      if (posted[size_t(r)]) {  // a beat arrived
        if (incoming[size_t(r)].count != beats[size_t(r)].count) moved[size_t(r)] = now;
        beats[size_t(r)] = incoming[size_t(r)];
        heard[size_t(r)] = now;
      }
      rq = comm.irecv(std::as_writable_bytes(std::span(&incoming[size_t(r)], 1)), r, kBeatTag);
      posted[size_t(r)] = true;
    }
    if (now - last_written > std::chrono::seconds(1)) {
      std::string ranks;
      for (int r = 0; r < world; ++r)
        ranks += fmt::format("{}{{\"rank\": {}, \"host\": {}, \"activity\": {}, \"silent_s\": {:.1f}}}",
                             r ? ", " : "", r, json_quoted(beats[size_t(r)].host),
                             json_quoted(beats[size_t(r)].activity), seconds(now - heard[size_t(r)]));
      try {
        write_file_atomic(beats_path_, fmt::format("{{\"ranks\": [{}]}}\n", ranks));
      } catch (const Error&) {  // only a report's detail: the run goes on without it
      }
      last_written = now;
    }
    const auto latest = *std::max_element(moved.begin(), moved.end());
    if (now - latest < timeout) continue;
    // No rank has moved for the timeout: name the silent ones, and what the others wait in.
    std::string silent, waiting;
    std::map<std::string, std::string> by_activity;
    for (int r = 0; r < world; ++r) {
      if (now - heard[size_t(r)] > 3 * kInterval + std::chrono::seconds(1)) {
        silent += fmt::format("{}rank {} ({}), silent for {:.0f} s", silent.empty() ? "" : "; ", r,
                              beats[size_t(r)].host[0] ? beats[size_t(r)].host : "host unknown",
                              seconds(now - heard[size_t(r)]));
      } else {
        std::string& ranks = by_activity[beats[size_t(r)].activity];
        ranks += fmt::format("{}{}", ranks.empty() ? "" : ", ", r);
      }
    }
    for (const auto& [activity, ranks] : by_activity)
      waiting += fmt::format("{}rank(s) {} in '{}'", waiting.empty() ? "" : "; ", ranks, activity);
    end_job(fmt::format("dptrain: rank 0: no rank made progress for {:.0f} s ([launch] wait_timeout): {}{}{}; ending the job",
                        seconds(now - latest),
                        silent.empty() ? "every rank is alive (a deadlock?)"
                                       : "waiting for " + silent + " (stopped, or its host unreachable)",
                        waiting.empty() ? "" : "; ", waiting));
  }
  // Stopping (the run is over on this rank): each rank's final beat, and rank 0 receives until it has
  // every rank's, so that no beat is left on its way; at most 2 s (a rank may have ended otherwise).
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  auto done = [&](Request& r) {
    while (!r.test())
      if (Clock::now() > deadline) return false;
    return true;
  };
  if (me != 0) {
    if (!done(send)) return;
    outgoing = mine;
    outgoing.last = 1;
    send = comm.isend(std::as_bytes(std::span(&outgoing, 1)), 0, kBeatTag);
    drained_ = done(send);
    return;
  }
  bool all = true;
  for (int r = 1; r < world && all; ++r) {
    Request& rq = receives[size_t(r)];
    if (!posted[size_t(r)]) rq = comm.irecv(std::as_writable_bytes(std::span(&incoming[size_t(r)], 1)), r, kBeatTag);
    while ((all = done(rq)) && !incoming[size_t(r)].last)
      rq = comm.irecv(std::as_writable_bytes(std::span(&incoming[size_t(r)], 1)), r, kBeatTag);
  }
  drained_ = all;
}

}  // namespace dp
