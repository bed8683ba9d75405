// The run's output directory: refuses to overwrite an earlier run by accident, and on --resume keeps the
// metrics log consistent with the checkpoint being resumed.
#pragma once

#include <cstdint>
#include <string>

namespace dp {

struct RunDir {
  std::string root;
  std::string checkpoints() const { return root + "/checkpoints"; }
  std::string metrics() const { return root + "/metrics.jsonl"; }
  std::string summary() const { return root + "/summary.json"; }
  std::string job() const { return root + "/job.toml"; }
  std::string trace() const { return root + "/trace.json"; }
  // Written when the run stopped early on a signal (stopped_json); removed when a run starts here.
  std::string stopped() const { return root + "/stopped.json"; }
  // Every rank's latest heartbeat (watchdog.h), rewritten by rank 0 once a second while the run goes on.
  std::string heartbeat() const { return root + "/heartbeat.json"; }
  // Written by a rank that ended the run with an error of its own (a non-finite loss, an allocation past a
  // device's memory, bad input found while training); removed when a run starts here. A launcher does not
  // restart such a run ([launch] max_restarts): it would meet the same error again.
  std::string failed() const { return root + "/failed.json"; }
};

// Read-only check, safe on every rank: a new run (not resume) into a directory that already holds a run
// is a UsageError unless `force`.
void check_run_dir(const RunDir& dir, bool resume, bool force);
// Before ranks start (the launcher): the folders can be created and written, found by creating them and
// a file in them, then removing whatever it created. Throws UsageError naming the directory otherwise.
void check_run_dir_writable(const RunDir& dir);
// Rank 0 only, after every check passed: creates the folders; for a forced new run removes the previous
// run's files (metrics, summary, checkpoints, job); on resume drops metrics lines after `resume_step`.
void prepare_run_dir(const RunDir& dir, bool resume, bool force, int64_t resume_step);

// What stopped.json says: the signal that stopped the run, the lowest rank that received it, the last
// step trained and the checkpoint written of it ("" when checkpoints are off).
struct StoppedRun {
  int signal = 0, rank = -1;
  int64_t step = 0;
  std::string checkpoint;
};
std::string stopped_json(const StoppedRun& s);

// Writes `text` to `path` atomically (temporary file + rename).
void write_file_atomic(const std::string& path, const std::string& text);

}  // namespace dp
