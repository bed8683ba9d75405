// Rank 0's view of a run: a redrawn progress bar on a terminal, plain lines otherwise.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "lib/job/job_enums.h"

namespace dp {

class Progress {
 public:
  // [log] progress: automatic is a bar on a terminal; plain lines every `every` steps.
  Progress(std::FILE* out, ProgressMode mode, int64_t total_steps, int64_t every);
  // step_seconds: this step's wall time (for the ETA).
  void step(int64_t step, int64_t epoch, double loss, double samples_per_sec, double step_seconds);
  void note(const std::string& line);  // a line that must not be overdrawn
  void finish();

 private:
  std::FILE* out_;
  bool bar_, quiet_;
  int64_t total_, every_;
  double smoothed_sps_ = 0, smoothed_step_s_ = 0;
  std::chrono::steady_clock::time_point last_draw_{};
  bool drawn_ = false;
};

}  // namespace dp
