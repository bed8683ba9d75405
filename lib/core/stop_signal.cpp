// Stop requests by signal (stop_signal.h): an async-signal-safe flag and the handlers that set it.
#include "lib/core/stop_signal.h"

#include <fmt/format.h>
#include <signal.h>
#include <time.h>

#include <atomic>
#include <csignal>

namespace dp {
namespace {

std::atomic<int> requested{0};
std::atomic<long> requested_at{0};  // CLOCK_MONOTONIC milliseconds
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<long>::is_always_lock_free,
              "the flag is set from a signal handler");

// First signal: remember it. One more, a second or more later: the default action (the handler is reset,
// and the signal, blocked while this runs, is delivered again as soon as it returns). Closer together
// they are one request: a scheduler signals every process of a job, and a launcher passes it on too.
void on_stop_signal(int sig) {
  int none = 0;
  if (requested.compare_exchange_strong(none, sig)) {
    requested_at.store(monotonic_ms());
    return;
  }
  if (monotonic_ms() - requested_at.load() < kSameRequestMs) return;
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

long monotonic_ms() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return long(now.tv_sec) * 1000 + long(now.tv_nsec / 1000000);
}

void install_stop_handlers() {
  struct sigaction action = {};
  action.sa_handler = on_stop_signal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  for (int sig : kStopSignals) ::sigaction(sig, &action, nullptr);
}

int pending_stop_signal() { return requested.load(std::memory_order_relaxed); }

void set_stop_request(int signal) {
  requested_at.store(monotonic_ms());
  requested.store(signal);
}

bool is_stop_signal(int signal) {
  for (int sig : kStopSignals)
    if (sig == signal) return true;
  return false;
}

std::string signal_name(int signal) {
  switch (signal) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    case SIGKILL: return "SIGKILL";
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    default: return fmt::format("signal {}", signal);
  }
}

}  // namespace dp
