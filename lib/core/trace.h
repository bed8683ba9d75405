// A timeline recorder for one rank, written out in the Chrome trace event format (trace_json.cpp) for
// Perfetto or chrome://tracing: one track (Chrome's "tid") per thread of the rank (compute, comm, server),
// complete events ("ph":"X") with a start, a duration and up to three integer arguments.
//
// Near-zero cost: a thread records into its own preallocated buffer (no lock, no allocation; when it is
// full, events are counted as dropped), and a TraceScope on a thread without a track, or outside the
// step window, is a thread-local load and a branch. Scopes are RAII, so a thread's events are always well
// nested (each inside or disjoint from the others).
//
// Which steps are recorded: the Tracer counts the steps its compute thread begins (next_step) and records
// while the count is within [first_step, first_step + steps): a window after warm-up, so a long run
// writes a bounded trace.
//
// How code finds its track: a thread binds one with TraceThread, and TraceScope reads it. This is the one
// piece of per-thread state in dptrain, on purpose: the events worth seeing (a block's forward, MRA's
// wait for a bucket in a model hook, a pipeline peer's receive) happen deep inside calls whose
// signatures (Model, Block, GradientSync hooks) have no business carrying a recorder, and a thread-local
// pointer is exactly "this thread's buffer" (no sharing, no lock). Rank, communicator and the Tracer
// itself stay parameters; a thread that starts another one hands its Tracer over (trace_of_this_thread).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace dp {

using trace_clock = std::chrono::steady_clock;

// A named integer argument of an event; `key` is a string literal (events keep the pointer).
struct TraceArg {
  const char* key = nullptr;
  int64_t value = 0;
};

// One complete event; `name` is a string literal.
struct TraceEvent {
  const char* name = nullptr;
  int64_t start_ns = 0, dur_ns = 0;  // steady clock, nanoseconds
  std::array<TraceArg, 3> args{};
};

struct TraceOptions {
  bool enabled = false;
  int64_t first_step = 2;        // 1-based, counted by Tracer::next_step
  int64_t steps = 10;            // steps recorded from first_step
  size_t events_per_track = 1 << 16;  // preallocated per thread; more are dropped (and counted)
};

class Tracer;

// One thread's events. Written by one thread at a time (the one that bound it).
class TraceTrack {
 public:
  TraceTrack(Tracer& tracer, std::string name, int tid, size_t capacity);
  Tracer& tracer() const { return tracer_; }
  const std::string& name() const { return name_; }
  int tid() const { return tid_; }
  void add(const TraceEvent& e) {
    if (events_.size() < events_.capacity())
      events_.push_back(e);
    else
      ++dropped_;
  }
  const std::vector<TraceEvent>& events() const { return events_; }
  int64_t dropped() const { return dropped_; }

 private:
  Tracer& tracer_;
  std::string name_;
  int tid_;
  std::vector<TraceEvent> events_;
  int64_t dropped_ = 0;
};

class Tracer {
 public:
  // rank: Chrome's "pid"; host: shown in the process name ("rank 1 (host)").
  Tracer(const TraceOptions& options, int rank, std::string host);
  const TraceOptions& options() const { return options_; }
  int rank() const { return rank_; }
  const std::string& host() const { return host_; }

  // The track named `name` (created on first use, tids in creation order). Thread-safe.
  TraceTrack& track(const std::string& name);
  // The compute thread begins a step: opens or closes the window (see above).
  void next_step();
  bool recording() const { return recording_.load(std::memory_order_relaxed); }
  // Times are written relative to this instant (every rank takes it right after the same barrier).
  void set_origin(trace_clock::time_point t) { origin_ = t; }
  trace_clock::time_point origin() const { return origin_; }
  // Every track, in tid order (read once the threads that write them are done).
  std::vector<const TraceTrack*> tracks() const;

 private:
  TraceOptions options_;
  int rank_;
  std::string host_;
  std::atomic<bool> recording_{false};
  int64_t steps_begun_ = 0;
  trace_clock::time_point origin_ = trace_clock::now();
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<TraceTrack>> tracks_;
};

// Binds this thread to `tracer`'s track `name` for its lifetime (the previous binding comes back after);
// a null tracer binds nothing (tracing off).
class TraceThread {
 public:
  TraceThread(Tracer* tracer, const std::string& name);
  ~TraceThread();
  TraceThread(const TraceThread&) = delete;
  TraceThread& operator=(const TraceThread&) = delete;

 private:
  TraceTrack* previous_;
};

// The tracer this thread records for (null when none): for a thread about to start another one.
Tracer* trace_of_this_thread();
// The compute thread begins a step (Tracer::next_step of its tracer; nothing without one).
void trace_next_step();

// An event from construction to destruction on this thread's track (nothing when the thread has no track
// or the window is closed when it starts). `name` and the keys are string literals.
// What the watched thread (a rank's compute thread, watchdog.h) is doing, for a job that stops making
// progress: every TraceScope it enters counts as progress and names its activity, traced or not.
struct ThreadProgress {
  std::atomic<int64_t> count{0};
  std::atomic<const char*> activity{"between steps"};
};
// The calling thread's scopes report to `progress` from now on (null: to nothing).
void watch_this_thread(ThreadProgress* progress) noexcept;

class TraceScope {
 public:
  explicit TraceScope(const char* name, TraceArg a = {}, TraceArg b = {}, TraceArg c = {}) noexcept;
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;
  // Whether this scope records (the thread has a track and the window was open when it started).
  bool active() const noexcept { return track_ != nullptr; }
  // Sets argument i (0..2) once its value is known (before the scope ends).
  void set_arg(int i, TraceArg a) noexcept {
    if (track_) event_.args[size_t(i)] = a;
  }

 private:
  TraceTrack* track_;
  TraceEvent event_;
  const char* outer_activity_ = nullptr;  // the watched thread's activity before this scope
};

// This rank's tracks as Chrome trace events: the "M" metadata (process_name "rank N (host)", thread_name)
// then every complete event sorted by start (ties: the longer, enclosing one first), ts and dur in
// microseconds from the origin. Comma-separated JSON objects, no brackets (rank 0 joins every rank's).
std::string trace_events_json(const Tracer& tracer);

}  // namespace dp
