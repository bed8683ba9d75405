// What the monitor's tests share: a temporary run directory and metrics lines written as dptrain writes
// them (lib/train/metrics.cpp), to craft runs of every kind.
#pragma once

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "lib/monitor/snapshot.h"

namespace monitor_test {

namespace fs = std::filesystem;

struct TempRun {
  fs::path dir;
  explicit TempRun(const std::string& tag = "")
      : dir(fs::temp_directory_path() / fmt::format("dp_monitor_test_{}{}", ::getpid(), tag)) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~TempRun() { fs::remove_all(dir); }
  void append(const std::string& text) const { std::ofstream(dir / "metrics.jsonl", std::ios::app) << text; }
  void summary(const std::string& json) const { std::ofstream(dir / "summary.json") << json; }
};

// A start line at the invocation's own time `t` (with "step", as a resume keeps it).
inline std::string start_line(int ranks, int64_t total, const std::string& strategy = "data", int64_t first_step = 1,
                              double t = 0.01, bool language_model = false) {
  return fmt::format("{{\"kind\":\"start\",\"step\":{},\"name\":\"t\",\"strategy\":\"{}\",\"device\":\"cpu\","
                     "\"ranks\":{},\"total_steps\":{},\"steps_per_epoch\":100,\"first_step\":{},\"global_batch\":128{},"
                     "\"t\":{}}}\n",
                     first_step - 1, strategy, ranks, total, first_step, language_model ? ",\"language_model\":true" : "",
                     t);
}

inline std::string train_line(int64_t step, int rank, double t, int64_t batch, double compute_ms, double wait_ms,
                              int stage = -1, double samples_per_sec = 1000.0) {
  return fmt::format("{{\"kind\":\"train\",\"step\":{},\"epoch\":0,\"rank\":{},\"loss\":{},\"lr\":0.001,"
                     "\"samples_per_sec\":{:.1f},\"local_batch\":{},\"compute_ms\":{},\"wait_ms\":{},"
                     "\"comm_ms\":0.5,\"update_ms\":0.1{},\"resident_bytes\":5000000,\"t\":{}}}\n",
                     step, rank, 2.0 / double(step), samples_per_sec, batch, compute_ms, wait_ms,
                     stage >= 0 ? fmt::format(",\"stage\":{}", stage) : "", t);
}

inline dp::monitor::RankFigures figures(int rank, int64_t samples, double compute_ms, double wait_ms, double share,
                                        int stage = -1) {
  dp::monitor::RankFigures f;
  f.rank = rank;
  f.samples = samples;
  f.compute_ms = compute_ms;
  f.compute_ms_per_sample = compute_ms / double(samples);
  f.wait_ms = wait_ms;
  f.share = share;
  f.stage = stage;
  return f;
}

}  // namespace monitor_test
