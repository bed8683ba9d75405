// JSON lines for metrics.jsonl and the summary document. Floats print in their shortest exact form,
// so equal losses give byte-identical lines.
#include "lib/train/metrics.h"

#include <cmath>

#include <fmt/format.h>

#include "lib/core/error.h"
#include "lib/core/json.h"

namespace dp {

MetricsLog::MetricsLog(const std::string& path, std::chrono::steady_clock::time_point start)
    : file_(std::fopen(path.c_str(), "a")), path_(path), start_(start) {
  if (!file_) throw RuntimeFailure(path, "cannot open metrics log for writing", "check permissions");
}

MetricsLog::~MetricsLog() {
  if (file_) std::fclose(file_);
}

std::string train_line_json(const TrainLine& l) {
  std::string line = fmt::format(
      "{{\"kind\":\"train\",\"step\":{},\"epoch\":{},\"rank\":{},\"loss\":{},\"lr\":{},"
      "\"samples_per_sec\":{:.1f},\"local_batch\":{},\"compute_ms\":{:.3f},\"wait_ms\":{:.3f},"
      "\"comm_ms\":{:.3f},\"update_ms\":{:.3f},\"samples_digest\":{}",
      l.step, l.epoch, l.rank, l.loss, l.lr, l.samples_per_sec, l.times.local_batch, l.times.compute_ms,
      l.times.wait_ms, l.times.comm_ms, l.times.update_ms, l.times.samples_digest);
  line += l.strategy_fields;
  if (l.times.allocated_peak_bytes >= 0)
    line += fmt::format(",\"allocated_peak_bytes\":{:.0f}", l.times.allocated_peak_bytes);
  if (l.times.resident_bytes >= 0) line += fmt::format(",\"resident_bytes\":{:.0f}", l.times.resident_bytes);
  if (l.times.gpu_used_bytes >= 0) line += fmt::format(",\"gpu_used_bytes\":{:.0f}", l.times.gpu_used_bytes);
  if (l.times.gpu_util_percent >= 0) line += fmt::format(",\"gpu_util_percent\":{:.0f}", l.times.gpu_util_percent);
  return line + "}";
}

void MetricsLog::write(const TrainLine& l) { put(train_line_json(l)); }

void MetricsLog::write(const StartLine& l) {
  language_model_ = l.language_model;
  // "step" first: run_dir's resume reads the first "step" of a line.
  put(fmt::format("{{\"kind\":\"start\",\"step\":{},\"name\":{},\"strategy\":{},\"device\":{},\"ranks\":{},"
                  "\"total_steps\":{},\"steps_per_epoch\":{},\"first_step\":{},\"global_batch\":{}{}}}",
                  l.first_step - 1, json_quoted(l.name), json_quoted(l.strategy), json_quoted(l.device), l.ranks,
                  l.total_steps, l.steps_per_epoch, l.first_step, l.global_batch,
                  l.language_model ? ",\"language_model\":true" : ""));
}

void MetricsLog::put(const std::string& object) {
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  fmt::print(file_, "{},\"t\":{:.3f}}}\n", std::string_view(object).substr(0, object.size() - 1), t);
  std::fflush(file_);
}

void MetricsLog::write(const EvalLine& l) {
  const std::string quality = language_model_ ? fmt::format("\"perplexity\":{:.4f}", std::exp(l.test_loss))
                                              : fmt::format("\"test_accuracy\":{}", l.test_accuracy);
  put(fmt::format("{{\"kind\":\"eval\",\"step\":{},\"epoch\":{},\"test_loss\":{},{},\"train_seconds\":{:.3f}}}",
                  l.step, l.epoch, l.test_loss, quality, l.train_seconds));
}

void MetricsLog::flush() { std::fflush(file_); }

std::string summary_json(const Summary& s) {
  // A language model has no accuracy: its validation loss (nats per token) and perplexity instead.
  const std::string quality =
      s.language_model ? fmt::format("  \"language_model\": true,\n  \"val_loss\": {},\n  \"perplexity\": {:.4f},\n"
                                     "  \"tokens_per_sec\": {:.1f},\n  \"bigram_entropy\": {},\n",
                                     s.test_loss, std::exp(s.test_loss),
                                     s.samples_per_sec * double(s.tokens_per_sample), s.bigram_entropy)
                       : fmt::format("  \"test_accuracy\": {},\n", s.test_accuracy);
  std::string memory;
  for (size_t r = 0; r < s.memory.size(); ++r)
    memory += fmt::format("{}{{\"rank\": {}, \"allocated_peak_bytes\": {:.0f}, \"resident_peak_bytes\": {:.0f}}}",
                          r ? ", " : "", r, s.memory[r].allocated_peak_bytes, s.memory[r].resident_peak_bytes);
  return fmt::format(
      "{{\n{}  \"test_loss\": {},\n  \"train_loss\": {},\n"
      "  \"samples_per_sec\": {:.1f},\n  \"wall_seconds\": {:.3f},\n  \"train_seconds\": {:.3f},\n"
      "  \"ranks\": {},\n  \"epochs\": {},\n  \"steps\": {},\n  \"resumed_from_step\": {},\n  \"skipped_steps\": {},\n"
      "  \"model\": \"{}\",\n  \"parameters\": {},\n  \"memory\": [{}],\n  \"machines\": {},\n  \"job\": {}\n}}\n",
      quality, s.test_loss, s.train_loss, s.samples_per_sec, s.wall_seconds, s.train_seconds,
      s.ranks, s.epochs, s.steps, s.resumed_from_step, s.skipped_steps, s.model, s.parameters, memory,
      s.machines_json.empty() ? "[]" : s.machines_json, s.job_json.empty() ? "{}" : s.job_json);
}

}  // namespace dp
