// metrics.jsonl (one JSON object per line: a "start" line per invocation, a "train" line per logged step
// per rank, an "eval" line per evaluation, each with "t", the seconds since this invocation started, and
// on the file as soon as it is written, so that a live run can be followed) and summary.json. Written by
// rank 0 only.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace dp {

// What one rank measured in one step. Times in milliseconds.
struct StepTimes {
  double compute_ms = 0;  // own work since the last step: batch division and gather, the leader's logging,
                          // forward and backward (under MRA, overlapping communication)
  double wait_ms = 0;     // waiting for the slowest rank before gradient exchange (plain only)
  double comm_ms = 0;     // gradient exchange the step waited for (MRA: what backward did not hide, and
                          // the forward's waits for parameters still being all-gathered)
  double update_ms = 0;   // optimizer (MRA: on the communication thread, mostly hidden)
  int64_t local_batch = 0;
  // The rank's memory (lib/train/rank_gauges.h; negative: not measured): its compute buffers' peak so
  // far, its resident size and, on GPU ranks with NVML, the device's memory in use and utilisation.
  double allocated_peak_bytes = -1, resident_bytes = -1, gpu_used_bytes = -1, gpu_util_percent = -1;
};

struct TrainLine {
  int64_t step = 0, epoch = 0;
  int rank = 0;
  double loss = 0, lr = 0, samples_per_sec = 0;
  StepTimes times;
  // Strategy "cgp" (one line per rank and exchange): the rank's group, the staleness its group's update
  // was applied with, how long the server held the complete request (staleness bound or turn) and the
  // rank's exchange time (request to global model in hand).
  int group = -1;
  double staleness = 0, held_ms = 0, exchange_ms = 0;
  // Strategy "pipeline": the rank's stage (its wait_ms is its bubble: waiting for other stages).
  int stage = -1;
};

// Strategy "pipeline", at each pause: the plan's predictions beside the measurements of the mini-batches
// since the last pause (medians over its full mini-batches; a stage's slowest replica).
struct PipelineLine {
  int64_t step = 0, minibatches = 0;
  double predicted_minibatch_ms = 0, measured_minibatch_ms = 0;
  double predicted_bubble = 0, measured_bubble = 0;  // 1 - the stages' mean busy fraction
  struct StageLine {
    int stage = 0, first = 0, last = 0;
    std::vector<int> ranks, recompute;
    double predicted_compute_ms = 0, measured_compute_ms = 0;  // per mini-batch: forward, backward, recompute
    double measured_wait_ms = 0;                                // per mini-batch: the bubble
    std::vector<double> predicted_peak_bytes, measured_peak_bytes;  // per rank of the stage
    // Per rank of the stage: compute ms per sample, the median measured and what the plan expects at its
    // machine's described speed (empty: not known; lib/train/pipeline_records.h).
    std::vector<double> measured_ms_per_sample, expected_ms_per_sample;
  };
  std::vector<StageLine> stages;
};

// Strategy "cgp": a regrouping decision (adopted or not) and what it cost.
struct RegroupLine {
  int64_t step = 0;
  std::string grouping, reason;
  double predicted_before = 0, predicted_after = 0;  // samples/s of the old and the new grouping
  bool adopted = false;
  double cost_ms = 0;  // from the pause to training again (solve, communicators, state)
};

// Strategy "cgp", at the end of each phase: every group's times as the model predicts them from the
// speeds measured in the phase, and as they were measured (milliseconds, samples per second).
struct GroupTimesLine {
  double step_ms = 0, exchange_ms = 0, held_ms = 0, cycle_ms = 0, samples_per_sec = 0, staleness = 0;
};
struct PhaseGroupsLine {
  int64_t step = 0;  // the phase ended after this step
  std::string grouping;
  struct Group {
    std::vector<int> members;
    GroupTimesLine predicted, measured;
  };
  std::vector<Group> groups;
  double predicted_samples_per_sec = 0, measured_samples_per_sec = 0;
};

// The first line of every invocation (the run's, and every resume's): what progress and an ETA are
// measured against, and where the invocation's lines begin (their "t" counts from it). Its "step" is
// first_step - 1, the steps done before it: a resume keeps it like the lines of the steps before its
// checkpoint (run_dir.h), so the file keeps one start line per invocation it keeps lines of.
struct StartLine {
  std::string name, strategy, device;
  int ranks = 0;
  int64_t total_steps = 0, steps_per_epoch = 0, first_step = 1, global_batch = 0;
  bool language_model = false;  // text: evaluations are validation loss and perplexity, no accuracy
};

// An evaluation. Language models (a start line with language_model) are written without test_accuracy
// and with "perplexity": exp(test_loss), the loss being nats per token.
struct EvalLine {
  int64_t step = 0, epoch = 0;
  double test_loss = 0, test_accuracy = 0;
  double train_seconds = 0;  // training time (steps only, no pauses) of the run so far, for time to accuracy
};

class MetricsLog {
 public:
  // Appends; "t" counts from `start`.
  MetricsLog(const std::string& path, std::chrono::steady_clock::time_point start);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  void write(const StartLine& l);
  void write(const TrainLine& l);
  void write(const EvalLine& l);
  void write(const RegroupLine& l);
  void write(const PhaseGroupsLine& l);
  void write(const PipelineLine& l);
  void flush();

 private:
  void put(const std::string& json_object);  // adds "t", writes the line, flushes

  std::FILE* file_;
  std::string path_;
  std::chrono::steady_clock::time_point start_;
  bool language_model_ = false;  // the start line's
};

struct Summary {
  double test_accuracy = 0, test_loss = 0, train_loss = 0;
  double samples_per_sec = 0;  // training steps only
  double wall_seconds = 0, train_seconds = 0;
  int ranks = 1;
  int64_t epochs = 0, steps = 0, resumed_from_step = 0, parameters = 0;
  int64_t skipped_steps = 0;  // undone by [train] on_nonfinite = "skip" in this invocation
  std::string model, job_json;
  std::string machines_json;  // every kind of machine the ranks ran on, with its ranks (a JSON array)
  // Language models: test_loss is measured on the validation text and also reported as val_loss (nats
  // per token), with perplexity = exp(val_loss) and no accuracy; tokens/s = samples/s * tokens_per_sample.
  bool language_model = false;
  int64_t tokens_per_sample = 1;
  double bigram_entropy = 0;
  // Every rank's peak memory: what its compute buffers held at once (parameters, gradients, optimizer
  // state, activations, scratch: lib/core/memory_meter.h), and its process's peak resident size.
  struct RankMemory {
    double allocated_peak_bytes = 0, resident_peak_bytes = 0;
  };
  std::vector<RankMemory> memory;
};

std::string summary_json(const Summary& s);

}  // namespace dp
