// metrics.jsonl (one JSON object per line: a "start" line per invocation, a "train" line per logged step
// per rank, an "eval" line per evaluation, and the lines a strategy serialises itself (cgp's "regroup"
// and "groups", pipeline's "pipeline"), each with "t", the seconds since this invocation started, and
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
  uint64_t samples_digest = 0;  // samples_digest (lib/data/dataset.h) of the samples the rank read this step
  // The rank's memory (lib/train/step/rank_gauges.h; negative: not measured): its compute buffers' peak so
  // far, its resident size and, on GPU ranks with NVML, the device's memory in use and utilisation.
  double allocated_peak_bytes = -1, resident_bytes = -1, gpu_used_bytes = -1, gpu_util_percent = -1;
};

struct TrainLine {
  int64_t step = 0, epoch = 0;
  int rank = 0;
  double loss = 0, lr = 0, samples_per_sec = 0;
  StepTimes times;
  // The strategy's own fields of the rank's line, as JSON members after the common ones (",\"stage\":1";
  // empty: none): strategy "cgp"'s group and staleness (lib/train/cgp/cgp_lines.h), "pipeline"'s stage.
  std::string strategy_fields;
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

// A "train" line without its "t".
std::string train_line_json(const TrainLine& l);

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
  // A line a strategy serialised itself (a JSON object with its "kind" and "step"): "t" is added.
  void write_record(const std::string& json_object) { put(json_object); }
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
