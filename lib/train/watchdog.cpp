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

// Whether `r` completes by the deadline.
bool done(Request& r, Clock::time_point deadline) {
  while (!r.test())
    if (Clock::now() > deadline) return false;
  return true;
}

[[noreturn]] void end_job(const std::string& line) {
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
  std::_Exit(Watchdog::kExitStatus);  // the launcher (mpirun, srun) then ends every other rank
}

// A request still pending when it goes is abandoned: Outbox and Roster own the beats their requests
// read or write, declared before the requests (which therefore go first), and are never copied.

// This rank's own beat, and when its count last changed.
struct OwnBeat {
  OwnBeat(const std::string& host, Clock::time_point start) : moved(start) {
    std::strncpy(beat.host, host.c_str(), sizeof beat.host - 1);
  }
  void update(const ThreadProgress& progress, Clock::time_point now) {
    beat.count = progress.count.load(std::memory_order_relaxed);
    std::strncpy(beat.activity, progress.activity.load(std::memory_order_relaxed), sizeof beat.activity - 1);
    if (beat.count != last_count) last_count = beat.count, moved = now;
  }
  Beat beat;
  int64_t last_count = -1;
  Clock::time_point moved;
};

// Ranks other than 0: their beats on their way to rank 0, one at a time.
struct Outbox {
  Outbox() = default;
  Outbox(const Outbox&) = delete;
  // The next beat, once the last has left (or none was sent).
  void offer(Communicator& comm, const Beat& beat) {
    if (!send.test()) return;
    outgoing = beat;
    send = comm.isend(std::as_bytes(std::span(&outgoing, 1)), 0, kBeatTag);
  }
  // The final beat, after the one on its way; false when either has not left by the deadline.
  bool send_last(Communicator& comm, const Beat& beat, Clock::time_point deadline) {
    if (!done(send, deadline)) return false;
    outgoing = beat;
    outgoing.last = 1;
    send = comm.isend(std::as_bytes(std::span(&outgoing, 1)), 0, kBeatTag);
    return done(send, deadline);
  }
  Beat outgoing;
  Request send;
};

// Rank 0: every rank's latest beat, when it came, and when its count last changed; and the receives
// of the next ones.
struct Roster {
  Roster(int world, Clock::time_point start)
      : beats(static_cast<size_t>(world)), heard(size_t(world), start), moved(size_t(world), start),
        incoming(static_cast<size_t>(world)), receives(static_cast<size_t>(world)), posted(size_t(world), false) {}
  Roster(const Roster&) = delete;
  int world() const { return int(beats.size()); }
  void take_own(const OwnBeat& own, Clock::time_point now) {
    beats[0] = own.beat;
    heard[0] = now;
    moved[0] = own.moved;
  }
  void collect(Communicator& comm, Clock::time_point now);
  void write(const std::string& path, Clock::time_point now) const;
  [[noreturn]] void end_stalled_job(Clock::time_point now, Clock::time_point latest) const;
  bool drain(Communicator& comm, Clock::time_point deadline);

  std::vector<Beat> beats;
  std::vector<Clock::time_point> heard, moved;
  std::vector<Beat> incoming;
  std::vector<Request> receives;
  std::vector<bool> posted;
};

// The beats that arrived, and a receive posted for each rank's next one.
void Roster::collect(Communicator& comm, Clock::time_point now) {
  for (int r = 1; r < world(); ++r) {
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
}

// Every rank's latest beat, for the launcher's report after a rank is killed.
void Roster::write(const std::string& path, Clock::time_point now) const {
  std::string ranks;
  for (int r = 0; r < world(); ++r)
    ranks += fmt::format("{}{{\"rank\": {}, \"host\": {}, \"activity\": {}, \"silent_s\": {:.1f}}}",
                         r ? ", " : "", r, json_quoted(beats[size_t(r)].host),
                         json_quoted(beats[size_t(r)].activity), seconds(now - heard[size_t(r)]));
  try {
    write_file_atomic(path, fmt::format("{{\"ranks\": [{}]}}\n", ranks));
  } catch (const Error&) {  // only a report's detail: the run goes on without it
  }
}

// No rank has moved since `latest`: names the silent ones, and what the others wait in, and ends the job.
void Roster::end_stalled_job(Clock::time_point now, Clock::time_point latest) const {
  std::string silent, waiting;
  std::map<std::string, std::string> by_activity;
  for (int r = 0; r < world(); ++r) {
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

// Receives until every rank's final beat has come, so that no beat is left on its way; false when one
// has not by the deadline.
bool Roster::drain(Communicator& comm, Clock::time_point deadline) {
  bool all = true;
  for (int r = 1; r < world() && all; ++r) {
    Request& rq = receives[size_t(r)];
    if (!posted[size_t(r)]) rq = comm.irecv(std::as_writable_bytes(std::span(&incoming[size_t(r)], 1)), r, kBeatTag);
    while ((all = done(rq, deadline)) && !incoming[size_t(r)].last)
      rq = comm.irecv(std::as_writable_bytes(std::span(&incoming[size_t(r)], 1)), r, kBeatTag);
  }
  return all;
}

}  // namespace

WaitGuard::WaitGuard(double timeout_s, std::string what) {
  if (timeout_s <= 0) return;
  thread_ = std::thread([this, timeout_s, what = std::move(what)] {
    std::unique_lock lock(mutex_);
    if (!done_cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [this] { return done_; }))
      end_job(fmt::format("dptrain: not every rank reached {} within {:.0f} s ([launch] wait_timeout): a rank "
                          "stopped, failed or cannot be reached; ending the job", what, timeout_s));
  });
}

WaitGuard::~WaitGuard() {
  if (!thread_.joinable()) return;
  {
    const std::lock_guard lock(mutex_);
    done_ = true;
  }
  done_cv_.notify_one();
  thread_.join();
}

Watchdog::Watchdog(Communicator& comm, double timeout_s, std::string beats_path)
    : timeout_s_(timeout_s), beats_path_(std::move(beats_path)) {
  if (timeout_s <= 0) return;
  {
    const WaitGuard meeting(timeout_s, fmt::format("the start of training (rank {} on {} waits)", comm.rank(),
                                                   comm.host()));
    comm_ = comm.split(0, comm.rank());
  }
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
  const int me = comm.rank();
  const auto start = Clock::now();
  const auto timeout = std::chrono::duration<double>(timeout_s_);
  // A rank other than 0 ends the job itself when rank 0 has not: a quarter of the timeout later, at
  // least 5 s (so that rank 0, which names the ranks, goes first; a frozen rank 0 ends the job within
  // 1.25 x the timeout, not twice it).
  const auto backup = timeout + std::chrono::duration<double>(std::max(5.0, timeout_s_ / 4));
  OwnBeat own(comm.host(), start);
  Roster roster(comm.size(), start);
  Outbox outbox;
  auto last_written = start;
  while (!stop_) {
    std::this_thread::sleep_for(kInterval);
    const auto now = Clock::now();
    own.update(progress_, now);
    if (me != 0) {
      outbox.offer(comm, own.beat);
      if (now - own.moved > backup)
        end_job(fmt::format("dptrain: rank {} ({}): no progress for {:.0f} s in '{}' ([launch] wait_timeout {:.0f} s); "
                            "rank 0, which watches the job, has not ended it: it may be the one stopped; ending the job",
                            me, own.beat.host, seconds(now - own.moved), own.beat.activity, timeout_s_));
      continue;
    }
    roster.take_own(own, now);
    roster.collect(comm, now);
    if (now - last_written > std::chrono::seconds(1)) {
      roster.write(beats_path_, now);
      last_written = now;
    }
    const auto latest = *std::max_element(roster.moved.begin(), roster.moved.end());
    if (now - latest < timeout) continue;
    roster.end_stalled_job(now, latest);  // no rank has moved for the timeout
  }
  // Stopping (the run is over on this rank): each rank's final beat, and rank 0 receives until it has
  // every rank's, so that no beat is left on its way; at most 2 s (a rank may have ended otherwise).
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  drained_ = me != 0 ? outbox.send_last(comm, own.beat, deadline) : roster.drain(comm, deadline);
}

}  // namespace dp
