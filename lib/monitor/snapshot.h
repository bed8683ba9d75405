// The monitor's view of a run at one moment, computed from its RunRecord (pure): progress and ETA, the
// loss curve over every invocation (the run and its resumes, end to end), every rank's figures over a
// recent window of logged steps of the newest invocation (its ranks only: a resume may run on fewer), and
// which rank is slow and why. The text view, the JSON and the SVG (render.h) are drawn from it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/monitor/run_record.h"

namespace dp::monitor {

// One rank over the window. Times are means per logged step; memory is the newest line's (negative:
// not in the metrics); once the run has finished, the peaks are summary.json's.
struct RankFigures {
  int rank = 0, group = -1, stage = -1;
  int64_t samples = 0;                  // the rank's samples in the window
  double compute_ms_per_sample = 0;     // the median of its lines' compute_ms / local_batch
  double compute_samples_per_sec = 0;   // its own speed: 1000 / compute_ms_per_sample
  double share = 0;                     // of the window's samples (its batch share)
  double compute_ms = 0, comm_ms = 0, wait_ms = 0, update_ms = 0;
  double allocated_peak_bytes = -1;  // its compute buffers' peak so far
  double resident_bytes = -1, gpu_used_bytes = -1, gpu_util_percent = -1;  // now
  double resident_peak_bytes = -1;   // summary.json's
  double expected_ms_per_sample = -1;  // strategy pipeline: the plan's, at its described speed (-1: unknown)
};

// The slow ranks are named by their own compute per sample against the others' (the median of the other
// ranks), never by how long they wait: those at least slow_threshold x the others' and near_slowest x
// the slowest rank's. Under strategy pipeline the stages do different work: each rank's compute per
// sample is divided by what the plan expects of it (its stage's blocks at its machine's described
// speed) and those ratios are compared; without the plan's expectation, only a stage's replicas are.
struct SlowVerdict {
  std::vector<int> slow;        // ranks whose compute per sample is at least `threshold` x the others'
  std::vector<double> ratio;    // each slow rank's compute per sample over the others' median (pipeline
                                //   with expectations: its measured / expected over the others')
  std::vector<int> waiting;     // the other ranks that wait for them (more than the slow ones do)
  std::string reason;           // "rank 2: compute 3.0x the others' per sample; ranks 0,1,3 wait ..."
};
constexpr double slow_threshold = 1.25, near_slowest = 0.6;
SlowVerdict find_slow_ranks(const std::vector<RankFigures>& ranks, bool pipeline);

// One logged step, for the curves.
struct StepPoint {
  int64_t step = 0;
  double t = 0, loss = 0, samples_per_sec = 0;
  int invocation = 0;
  // Per rank of any invocation (index = rank; -1 when the step had no line of it): wait + comm ms, the
  // time it was blocked (plain data parallelism waits before the exchange, MRA inside it).
  std::vector<double> blocked_ms;
};

// Where a resume begins on the time axis, and on how many ranks it ran.
struct ResumePoint {
  double t = 0;
  int64_t first_step = 0;  // 0: unknown (no start line)
  int ranks = 0;           // 0: unknown
};

struct Snapshot {
  std::string dir, name, strategy, device;
  std::string state;  // "starting" | "running" | "stalled" | "finished"
  int ranks = 0;      // the newest invocation's
  bool language_model = false;  // evaluations are validation loss and perplexity, no accuracy
  int64_t step = 0, epoch = 0, total_steps = 0;  // total 0: unknown (a run without a start line)
  double progress = 0;                           // 0..1, or 0 when unknown
  double eta_seconds = -1;                       // -1: unknown
  double seconds_per_step = 0, elapsed_seconds = 0, seconds_since_write = 0;
  double loss = 0;                               // newest logged step
  // The window's samples over its time: the steps' samples/s combined as the summary's figure is
  // (samples over time), so that both agree; 0 before the newest invocation has logged a step.
  double samples_per_sec = 0;
  std::vector<StepPoint> curve;                  // every logged step of every invocation
  std::vector<ResumePoint> resumes;              // every invocation after the first
  std::vector<EvalPoint> evals;  // every evaluation, in order
  std::optional<EvalPoint> last_eval;
  int64_t window_first_step = 0, window_last_step = 0, window_steps = 0;  // of the newest invocation
  std::vector<RankFigures> rank_figures;
  SlowVerdict slow;
  std::string grouping;
  std::optional<RunSummary> summary;
};

// window_steps: how many of the newest logged steps the per-rank figures cover.
Snapshot make_snapshot(const RunRecord& record, int window_steps);

}  // namespace dp::monitor
