// What a run directory holds, as the monitor reads it: metrics.jsonl's lines (only complete ones: a line
// still being written is left for the next read), summary.json once the run has finished, and how long
// ago the metrics were last written. RunReader reads incrementally, so a live view rereads only what is new.
// A run killed and resumed is several invocations in one file: each begins with its start line (or, in
// files from before start lines were kept on a resume, where "t" goes back), and its "t" counts from its
// own start; the reader puts them end to end on one time axis and numbers every line's invocation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dp::monitor {

// One rank's "train" line. Memory fields are negative when the line does not carry them.
struct RankPoint {
  int64_t step = 0, epoch = 0;
  int rank = 0;
  double t = 0;  // seconds since the run started (after a resume: continuing from the process before)
  int invocation = 0;  // which invocation wrote it (0: the first in the file)
  double loss = 0, samples_per_sec = 0;
  int64_t local_batch = 0;
  double compute_ms = 0, wait_ms = 0, comm_ms = 0, update_ms = 0;
  int group = -1, stage = -1;
  double allocated_peak_bytes = -1;  // the rank's compute buffers' peak so far
  double resident_bytes = -1, gpu_used_bytes = -1, gpu_util_percent = -1;
};

// An evaluation. A language model's has perplexity (exp of the loss per token) and no accuracy (-1).
struct EvalPoint {
  int64_t step = 0;
  double t = 0, test_loss = 0, test_accuracy = -1, perplexity = -1;
  int invocation = 0;
};

// The "start" line a run writes first (runs from before it existed have none).
struct RunStart {
  std::string name, strategy, device;
  int ranks = 0;
  int64_t total_steps = 0, steps_per_epoch = 0, first_step = 1, global_batch = 0;
  bool language_model = false;
  double t = 0;  // when it was written (on the monitor's continued time axis)
};

// One invocation of the run (the first, or a resume): where it begins on the continued time axis, and its
// start line (none in files from before start lines were kept on a resume).
struct Invocation {
  std::optional<RunStart> start;
  double t = 0;
};

// A pipeline line's figures per rank (the newest line's): the plan's expected compute per sample at the
// rank's described speed (lib/train/pipeline/pipeline_records.h).
struct PipelineRank {
  int rank = 0, stage = 0;
  double expected_ms_per_sample = -1;  // -1: the line has no expectation
};

// summary.json's figures the monitor shows. A language model's has perplexity and no accuracy (-1).
struct RunSummary {
  double test_accuracy = -1, test_loss = 0, perplexity = -1, samples_per_sec = 0, wall_seconds = 0,
         train_seconds = 0;
  bool language_model = false;
  int64_t steps = 0;
  std::vector<double> allocated_peak_bytes, resident_peak_bytes;  // per rank
};

struct RunRecord {
  std::string dir;
  std::optional<RunStart> start;         // the newest start line
  std::vector<Invocation> invocations;   // in file order; the last is the newest
  bool language_model = false;           // a start line, an evaluation or summary.json says so
  std::vector<RankPoint> train;  // in file order: every rank's line of a logged step, step after step
  std::vector<EvalPoint> evals;
  std::vector<PipelineRank> pipeline;    // the newest pipeline line's, when the newest invocation wrote one
  std::string grouping;          // strategy cgp: the newest grouping of a "groups" or adopted "regroup" line
  std::optional<RunSummary> summary;
  double seconds_since_write = 0;  // since metrics.jsonl last changed
  int64_t lines = 0;               // complete JSON lines read
  int64_t skipped_lines = 0;       // complete lines that were not JSON (reported, not fatal)
};

class RunReader {
 public:
  // Throws UsageError (exit 2) when `dir` is not a run directory (neither metrics.jsonl nor job.toml).
  explicit RunReader(std::string dir);
  // Reads what was appended since the last call (all of it after a truncation, as --resume does) and
  // whether summary.json is there now.
  const RunRecord& refresh();
  const RunRecord& record() const { return record_; }

 private:
  void take_line(const std::string& line, int64_t number);

  RunRecord record_;
  std::string pending_;  // a partial last line
  uint64_t offset_ = 0;
  uint64_t file_identity_ = 0;  // metrics.jsonl's inode when read from the start
  // Begins an invocation at the line being read (`start`: its start line).
  void begin_invocation(const RunStart* start);

  double time_offset_ = 0, last_time_ = 0;  // seconds: the earlier processes' time, the latest line's
  double last_raw_t_ = 0;                   // the latest line's own "t"
  int64_t lines_read_ = 0;
};

}  // namespace dp::monitor
