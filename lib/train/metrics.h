// metrics.jsonl (one JSON object per line: a "train" line per logged step per rank, an "eval" line per
// evaluation) and summary.json. Written by rank 0 only.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

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
};

struct TrainLine {
  int64_t step = 0, epoch = 0;
  int rank = 0;
  double loss = 0, lr = 0, samples_per_sec = 0;
  StepTimes times;
};

struct EvalLine {
  int64_t step = 0, epoch = 0;
  double test_loss = 0, test_accuracy = 0;
};

class MetricsLog {
 public:
  explicit MetricsLog(const std::string& path);  // appends
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  void write(const TrainLine& l);
  void write(const EvalLine& l);
  void flush();

 private:
  std::FILE* file_;
  std::string path_;
};

struct Summary {
  double test_accuracy = 0, test_loss = 0, train_loss = 0;
  double samples_per_sec = 0;  // training steps only
  double wall_seconds = 0, train_seconds = 0;
  int ranks = 1;
  int64_t epochs = 0, steps = 0, resumed_from_step = 0, parameters = 0;
  std::string model, job_json;
  std::string machines_json;  // every kind of machine the ranks ran on, with its ranks (a JSON array)
  // Language models: test_* are measured on the validation text and also reported as val_loss
  // (nats per token); tokens/s = samples/s * tokens_per_sample.
  bool language_model = false;
  int64_t tokens_per_sample = 1;
  double bigram_entropy = 0;
};

std::string summary_json(const Summary& s);

}  // namespace dp
