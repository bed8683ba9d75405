// Typed errors of libdptrain. Every error carries what went wrong, where (a user's file:line:col, a data
// path, or a source location for internal faults) and a hint on how to fix it. lib/ only throws; apps/
// turns errors into one message line and an exit status (InputError -> 2, everything else -> 1).
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace dp {

class Error : public std::runtime_error {
 public:
  Error(std::string where, std::string what, std::string hint = {});
  const std::string& where() const { return where_; }
  const std::string& message() const { return message_; }
  const std::string& hint() const { return hint_; }
  // One line: "WHERE: error: WHAT (hint: HINT)".
  std::string line() const;
  virtual int exit_code() const { return 1; }

 private:
  std::string where_, message_, hint_;
};

// Bad input of any kind: command line, job file, data file, checkpoint. Exit status 2.
class InputError : public Error {
 public:
  using Error::Error;
  int exit_code() const override { return 2; }
};
class UsageError : public InputError { using InputError::InputError; };       // command line
class JobError : public InputError { using InputError::InputError; };         // job file / --set
class DataError : public InputError { using InputError::InputError; };        // dataset files
class CheckpointError : public InputError { using InputError::InputError; };  // checkpoint files
class ProfileError : public InputError { using InputError::InputError; };     // layer profile files

// Failures while running: communication, I/O on the output directory, broken invariants.
class RuntimeFailure : public Error { using Error::Error; };
// The training loss or the parameters stopped being finite ([train] on_nonfinite). `every_rank`: every
// rank found it at the same step (they end together and only rank 0 reports; otherwise the finding rank
// ends the job).
class NonFiniteError : public RuntimeFailure {
 public:
  NonFiniteError(std::string where, std::string what, std::string hint, bool every_rank)
      : RuntimeFailure(std::move(where), std::move(what), std::move(hint)), every_rank_(every_rank) {}
  bool every_rank() const { return every_rank_; }

 private:
  bool every_rank_;
};
class InternalError : public Error { using Error::Error; };

// "file.cpp:123" for internal checks.
std::string source_location(const char* file, int line);

}  // namespace dp

// Internal invariant: throws InternalError naming the source line. Not for user input.
#define DP_CHECK(cond, what)                                                              \
  do {                                                                                    \
    if (!(cond)) throw ::dp::InternalError(::dp::source_location(__FILE__, __LINE__),     \
                                           std::string("check failed: ") + #cond + ": " + \
                                               (what));                                   \
  } while (0)
