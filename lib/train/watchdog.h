// No wait blocks forever ([launch] wait_timeout). A thread on every rank beats once a second to rank 0
// over a communicator of its own, carrying how far the rank's compute thread has got (its TraceScope
// count, trace.h's ThreadProgress) and what it is doing. When no rank has made progress for the timeout,
// rank 0 says which ranks the job is waiting for (those that sent nothing lately: stopped, or their host
// unreachable) and what the others are waiting in, and ends the job (exit status 124). If rank 0 itself
// is the one stopped, a rank that has made no progress for the timeout plus a quarter of it (at least
// 5 s) ends the job instead.
// Rank 0 also keeps every rank's latest beat in a file (heartbeat.json in the run directory), so that
// after a rank is killed the launcher can say what each rank was doing.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "lib/comm/communicator.h"
#include "lib/core/trace.h"

namespace dp {

// Before the watchdog runs, the ranks meet in collectives (MPI's start, the watchdog's own communicator):
// a rank stopped or cut off then would hold the others there for good (measured: a node frozen 1.5 s into
// a run held it for over 13 minutes). A WaitGuard ends the job like the watchdog (one line, exit status
// 124) unless it is destroyed within `timeout_s` (<= 0: never); `what` names what the ranks wait for.
class WaitGuard {
 public:
  WaitGuard(double timeout_s, std::string what);
  ~WaitGuard();
  WaitGuard(const WaitGuard&) = delete;
  WaitGuard& operator=(const WaitGuard&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::thread thread_;
};

class Watchdog {
 public:
  static constexpr int kExitStatus = 124;
  // Collective (splits `comm`). Watches the calling thread; `timeout_s` <= 0: watches nothing.
  // `beats_path`: where rank 0 writes every rank's latest beat, once a second.
  Watchdog(Communicator& comm, double timeout_s, std::string beats_path);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  void run();
  std::unique_ptr<Communicator> comm_;
  double timeout_s_;
  std::string beats_path_;
  ThreadProgress progress_;
  std::atomic<bool> stop_{false};
  bool drained_ = false;  // every beat sent was received: the communicator may be freed
  std::thread thread_;
};

}  // namespace dp
