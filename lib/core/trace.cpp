// The timeline recorder (trace.h): tracks, the step window, the thread binding, scopes, and one rank's
// events as Chrome trace event JSON.
#include "lib/core/trace.h"

#include <fmt/format.h>

#include <algorithm>

#include "lib/core/json.h"

namespace dp {
namespace {

// This thread's track (see trace.h for why this one pointer is per-thread state).
thread_local TraceTrack* this_thread_track = nullptr;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(trace_clock::now().time_since_epoch()).count();
}

// Microseconds with nanosecond digits: exact, so nesting survives the conversion.
std::string micros(int64_t ns) {
  const char* sign = ns < 0 ? "-" : "";
  const int64_t a = ns < 0 ? -ns : ns;
  return fmt::format("{}{}.{:03}", sign, a / 1000, a % 1000);
}

}  // namespace

TraceTrack::TraceTrack(Tracer& tracer, std::string name, int tid, size_t capacity)
    : tracer_(tracer), name_(std::move(name)), tid_(tid) {
  events_.reserve(capacity);
}

Tracer::Tracer(const TraceOptions& options, int rank, std::string host)
    : options_(options), rank_(rank), host_(std::move(host)) {}

TraceTrack& Tracer::track(const std::string& name) {
  std::lock_guard lock(mutex_);
  for (const auto& t : tracks_)
    if (t->name() == name) return *t;
  tracks_.push_back(std::make_unique<TraceTrack>(*this, name, int(tracks_.size()), options_.events_per_track));
  return *tracks_.back();
}

void Tracer::next_step() {
  ++steps_begun_;
  const bool on = options_.enabled && steps_begun_ >= options_.first_step &&
                  steps_begun_ < options_.first_step + options_.steps;
  recording_.store(on, std::memory_order_relaxed);
}

std::vector<const TraceTrack*> Tracer::tracks() const {
  std::lock_guard lock(mutex_);
  std::vector<const TraceTrack*> all;
  for (const auto& t : tracks_) all.push_back(t.get());
  return all;
}

TraceThread::TraceThread(Tracer* tracer, const std::string& name) : previous_(this_thread_track) {
  if (tracer) this_thread_track = &tracer->track(name);
}

TraceThread::~TraceThread() { this_thread_track = previous_; }

Tracer* trace_of_this_thread() {
  return this_thread_track ? &this_thread_track->tracer() : nullptr;
}

void trace_next_step() {
  if (Tracer* t = trace_of_this_thread()) t->next_step();
}

namespace {
thread_local ThreadProgress* watched = nullptr;
}  // namespace

void watch_this_thread(ThreadProgress* progress) noexcept { watched = progress; }

TraceScope::TraceScope(const char* name, TraceArg a, TraceArg b, TraceArg c) noexcept : track_(this_thread_track) {
  if (watched) {  // the watched thread alone writes: plain stores, no read-modify-write
    watched->count.store(watched->count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    outer_activity_ = watched->activity.load(std::memory_order_relaxed);
    watched->activity.store(name, std::memory_order_relaxed);
  }
  if (track_ && !track_->tracer().recording()) track_ = nullptr;
  if (!track_) return;
  event_.name = name;
  event_.args = {a, b, c};
  event_.start_ns = now_ns();
}

TraceScope::~TraceScope() {
  if (watched && outer_activity_) {
    watched->count.store(watched->count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    watched->activity.store(outer_activity_, std::memory_order_relaxed);
  }
  if (!track_) return;
  event_.dur_ns = now_ns() - event_.start_ns;
  track_->add(event_);
}

std::string trace_events_json(const Tracer& tracer) {
  const int pid = tracer.rank();
  const int64_t origin = std::chrono::duration_cast<std::chrono::nanoseconds>(tracer.origin().time_since_epoch()).count();
  std::string out = fmt::format(
      R"({{"ph":"M","pid":{},"tid":0,"name":"process_name","args":{{"name":{}}}}},)"
      R"({{"ph":"M","pid":{},"tid":0,"name":"process_sort_index","args":{{"sort_index":{}}}}})",
      pid, json_quoted(fmt::format("rank {} ({})", pid, tracer.host())), pid, pid);
  for (const TraceTrack* track : tracer.tracks()) {
    out += fmt::format(R"(,{{"ph":"M","pid":{},"tid":{},"name":"thread_name","args":{{"name":{}}}}})", pid,
                       track->tid(), json_quoted(track->name()));
    if (track->dropped() > 0)  // the buffer filled up: say so on the track itself
      out += fmt::format(R"(,{{"ph":"M","pid":{},"tid":{},"name":"dropped_events","args":{{"count":{}}}}})", pid,
                         track->tid(), track->dropped());
    // Events were appended as they ended (inner before outer): order them by start, enclosing first.
    std::vector<TraceEvent> events = track->events();
    std::stable_sort(events.begin(), events.end(), [](const TraceEvent& a, const TraceEvent& b) {
      return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.dur_ns > b.dur_ns;
    });
    for (const TraceEvent& e : events) {
      out += fmt::format(R"(,{{"ph":"X","pid":{},"tid":{},"name":{},"ts":{},"dur":{})", pid, track->tid(),
                         json_quoted(e.name), micros(e.start_ns - origin), micros(e.dur_ns));
      std::string args;
      for (const TraceArg& a : e.args)
        if (a.key) args += fmt::format("{}{}:{}", args.empty() ? "" : ",", json_quoted(a.key), a.value);
      if (!args.empty()) out += R"(,"args":{)" + args + "}";
      out += "}";
    }
  }
  return out;
}

}  // namespace dp
