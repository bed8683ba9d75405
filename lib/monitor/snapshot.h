// The monitor's view of a run at one moment, computed from its RunRecord (pure): progress and ETA, the
// loss curve, every rank's figures over a recent window of logged steps, and which rank is slow and why.
// The text view, the JSON and the SVG (render.h) are drawn from it.
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
};

// The slow ranks are named by their own compute per sample against the others' (the median of the other
// ranks, or under strategy pipeline of the other replicas of the stage), never by how long they wait:
// those at least slow_threshold x the others' and near_slowest x the slowest rank's.
struct SlowVerdict {
  std::vector<int> slow;        // ranks whose compute per sample is at least `threshold` x the others'
  std::vector<double> ratio;    // each slow rank's compute per sample over the others' median
  std::vector<int> waiting;     // the other ranks that wait for them (more than the slow ones do)
  std::string reason;           // "rank 2: compute 3.0x the others' per sample; ranks 0,1,3 wait ..."
};
constexpr double slow_threshold = 1.25, near_slowest = 0.6;
SlowVerdict find_slow_ranks(const std::vector<RankFigures>& ranks, bool pipeline);

// One logged step, for the curves.
struct StepPoint {
  int64_t step = 0;
  double t = 0, loss = 0, samples_per_sec = 0;
  // Per rank (index = rank; 0 when the step had no line of it): wait + comm ms, the time it was blocked
  // (plain data parallelism waits before the exchange, MRA inside it).
  std::vector<double> blocked_ms;
};

struct Snapshot {
  std::string dir, name, strategy, device;
  std::string state;  // "starting" | "running" | "stalled" | "finished"
  int ranks = 0;
  int64_t step = 0, epoch = 0, total_steps = 0;  // total 0: unknown (a run without a start line)
  double progress = 0;                           // 0..1, or 0 when unknown
  double eta_seconds = -1;                       // -1: unknown
  double seconds_per_step = 0, elapsed_seconds = 0, seconds_since_write = 0;
  double loss = 0, samples_per_sec = 0;          // newest logged step; samples/s: the window's mean
  std::vector<StepPoint> curve;                  // every logged step
  std::vector<EvalPoint> evals;  // every evaluation, in order
  std::optional<EvalPoint> last_eval;
  int64_t window_first_step = 0, window_last_step = 0, window_steps = 0;
  std::vector<RankFigures> rank_figures;
  SlowVerdict slow;
  std::string grouping;
  std::optional<RunSummary> summary;
};

// window_steps: how many of the newest logged steps the per-rank figures cover.
Snapshot make_snapshot(const RunRecord& record, int window_steps);

}  // namespace dp::monitor
