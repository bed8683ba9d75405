// The timeline recorder (lib/core/trace.h): the step window, nesting and its order in the JSON, threads
// with and without a track, a full buffer, and a thread bound to no tracer.
#define BOOST_TEST_MODULE trace
#include <boost/test/unit_test.hpp>

#include <string>
#include <thread>

#include "lib/core/trace.h"

namespace dp {
namespace {

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TraceOptions window(int64_t first, int64_t steps, size_t capacity = 1024) {
  TraceOptions o;
  o.enabled = true;
  o.first_step = first;
  o.steps = steps;
  o.events_per_track = capacity;
  return o;
}

BOOST_AUTO_TEST_CASE(records_only_the_steps_of_its_window) {
  Tracer tracer(window(2, 2), 3, "hostx");
  const TraceThread bound(&tracer, "compute");
  for (int64_t step = 1; step <= 5; ++step) {
    trace_next_step();
    const TraceScope s("step", {"step", step});
    BOOST_TEST(s.active() == (step == 2 || step == 3));
  }
  const std::string json = trace_events_json(tracer);
  BOOST_TEST(count_of(json, R"("name":"step")") == 2u);
  BOOST_TEST(count_of(json, R"("args":{"step":2})") == 1u);
  BOOST_TEST(count_of(json, R"("args":{"step":3})") == 1u);
  BOOST_TEST(count_of(json, R"("pid":3)") == 5u);  // 2 process metadata, 1 thread name, 2 events
  BOOST_TEST(json.find(R"x("name":"rank 3 (hostx)")x") != std::string::npos);
  BOOST_TEST(json.find(R"("name":"thread_name","args":{"name":"compute"})") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(an_enclosing_event_comes_before_what_it_encloses) {
  Tracer tracer(window(1, 1), 0, "h");
  const TraceThread bound(&tracer, "compute");
  trace_next_step();
  {
    const TraceScope outer("outer");
    { const TraceScope inner("inner"); }  // ends (and is appended) first
    { const TraceScope second("second"); }
  }
  const std::string json = trace_events_json(tracer);
  const size_t outer = json.find(R"("name":"outer")"), inner = json.find(R"("name":"inner")"),
               second = json.find(R"("name":"second")");
  BOOST_TEST(outer < inner);
  BOOST_TEST(inner < second);
}

BOOST_AUTO_TEST_CASE(each_thread_has_its_own_track_and_an_unbound_thread_records_nothing) {
  Tracer tracer(window(1, 10), 1, "h");
  const TraceThread bound(&tracer, "compute");
  trace_next_step();
  { const TraceScope s("on compute"); }
  std::thread comm([t = trace_of_this_thread()] {
    const TraceThread mine(t, "comm");
    const TraceScope s("on comm");
  });
  comm.join();
  std::thread stray([] {
    const TraceScope s("nowhere");
    BOOST_TEST(!s.active());
  });
  stray.join();
  const std::string json = trace_events_json(tracer);
  BOOST_TEST(json.find(R"("pid":1,"tid":0,"name":"on compute")") != std::string::npos);
  BOOST_TEST(json.find(R"("pid":1,"tid":1,"name":"on comm")") != std::string::npos);
  BOOST_TEST(json.find("nowhere") == std::string::npos);
  BOOST_TEST(tracer.tracks().size() == 2u);
}

BOOST_AUTO_TEST_CASE(a_full_buffer_drops_and_counts) {
  Tracer tracer(window(1, 1, 3), 0, "h");
  const TraceThread bound(&tracer, "compute");
  trace_next_step();
  for (int i = 0; i < 5; ++i) const TraceScope s("e", {"i", i});
  BOOST_TEST(tracer.tracks()[0]->events().size() == 3u);
  BOOST_TEST(tracer.tracks()[0]->dropped() == 2);
  BOOST_TEST(trace_events_json(tracer).find(R"("name":"dropped_events","args":{"count":2})") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(no_tracer_no_events) {
  const TraceThread bound(nullptr, "compute");
  trace_next_step();
  const TraceScope s("x");
  BOOST_TEST(!s.active());
  BOOST_TEST(trace_of_this_thread() == nullptr);
}

}  // namespace
}  // namespace dp
