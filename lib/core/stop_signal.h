// A run's stop request by signal. The first SIGINT, SIGTERM, SIGHUP, SIGUSR1 or SIGUSR2 (a scheduler's
// warning before pre-emption, such as Slurm's --signal) a rank receives asks the job to stop: the ranks
// agree on it at the next step boundary (each strategy carries every rank's request in an exchange it
// makes anyway), write a checkpoint and end. Another of those signals, a second or more after the first,
// ends the process at once by the signal's default action (closer together, it is the same request
// delivered twice). The request is process-wide because signals are.
#pragma once

#include <csignal>
#include <string>

namespace dp {

// The signals that ask for a stop, and how far apart two must be to count as two requests.
inline constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};
inline constexpr long kSameRequestMs = 1000;
// CLOCK_MONOTONIC in milliseconds; async-signal-safe (the handlers time the requests with it).
long monotonic_ms();

// Installs the handlers (idempotent). Ranks call it once MPI is up.
void install_stop_handlers();
// The signal of the pending stop request, 0 when none.
int pending_stop_signal();
// As if `signal` had arrived (fault injection, tests); 0 clears the request.
void set_stop_request(int signal);
// Whether `signal` is one of those that ask for a stop.
bool is_stop_signal(int signal);
// "SIGTERM", "SIGUSR1", ...; "signal N" for others.
std::string signal_name(int signal);

}  // namespace dp
