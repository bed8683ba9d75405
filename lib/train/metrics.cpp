// JSON lines for metrics.jsonl and the summary document. Floats print in their shortest exact form,
// so equal losses give byte-identical lines.
#include "lib/train/metrics.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

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

void MetricsLog::write(const TrainLine& l) {
  std::string line = fmt::format(
      "{{\"kind\":\"train\",\"step\":{},\"epoch\":{},\"rank\":{},\"loss\":{},\"lr\":{},"
      "\"samples_per_sec\":{:.1f},\"local_batch\":{},\"compute_ms\":{:.3f},\"wait_ms\":{:.3f},"
      "\"comm_ms\":{:.3f},\"update_ms\":{:.3f}",
      l.step, l.epoch, l.rank, l.loss, l.lr, l.samples_per_sec, l.times.local_batch, l.times.compute_ms,
      l.times.wait_ms, l.times.comm_ms, l.times.update_ms);
  if (l.group >= 0)
    line += fmt::format(",\"group\":{},\"staleness\":{},\"held_ms\":{:.3f},\"exchange_ms\":{:.3f}", l.group,
                        l.staleness, l.held_ms, l.exchange_ms);
  if (l.stage >= 0) line += fmt::format(",\"stage\":{}", l.stage);
  if (l.times.allocated_peak_bytes >= 0)
    line += fmt::format(",\"allocated_peak_bytes\":{:.0f}", l.times.allocated_peak_bytes);
  if (l.times.resident_bytes >= 0) line += fmt::format(",\"resident_bytes\":{:.0f}", l.times.resident_bytes);
  if (l.times.gpu_used_bytes >= 0) line += fmt::format(",\"gpu_used_bytes\":{:.0f}", l.times.gpu_used_bytes);
  if (l.times.gpu_util_percent >= 0) line += fmt::format(",\"gpu_util_percent\":{:.0f}", l.times.gpu_util_percent);
  put(line + "}");
}

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

void MetricsLog::write(const RegroupLine& l) {
  put(fmt::format("{{\"kind\":\"regroup\",\"step\":{},\"grouping\":\"{}\",\"reason\":\"{}\",\"adopted\":{},"
                  "\"predicted_before\":{:.1f},\"predicted_after\":{:.1f},\"cost_ms\":{:.3f}}}",
                  l.step, l.grouping, l.reason, l.adopted, l.predicted_before, l.predicted_after, l.cost_ms));
}

namespace {
std::string times_json(const GroupTimesLine& t) {
  return fmt::format("{{\"step_ms\":{:.3f},\"exchange_ms\":{:.3f},\"held_ms\":{:.3f},\"cycle_ms\":{:.3f},"
                     "\"samples_per_sec\":{:.1f},\"staleness\":{:.3f}}}",
                     t.step_ms, t.exchange_ms, t.held_ms, t.cycle_ms, t.samples_per_sec, t.staleness);
}
}  // namespace

void MetricsLog::write(const PhaseGroupsLine& l) {
  std::string groups;
  for (const PhaseGroupsLine::Group& g : l.groups)
    groups += fmt::format("{}{{\"members\":[{}],\"predicted\":{},\"measured\":{}}}", groups.empty() ? "" : ",",
                          fmt::join(g.members, ","), times_json(g.predicted), times_json(g.measured));
  put(fmt::format("{{\"kind\":\"groups\",\"step\":{},\"grouping\":\"{}\",\"predicted_samples_per_sec\":{:.1f},"
                  "\"measured_samples_per_sec\":{:.1f},\"groups\":[{}]}}",
                  l.step, l.grouping, l.predicted_samples_per_sec, l.measured_samples_per_sec, groups));
}

void MetricsLog::write(const PipelineLine& l) {
  std::string stages;
  for (const PipelineLine::StageLine& s : l.stages)
    stages += fmt::format(
        "{}{{\"stage\":{},\"blocks\":[{},{}],\"ranks\":[{}],\"recompute\":[{}],"
        "\"predicted\":{{\"compute_ms\":{:.3f},\"peak_bytes\":[{:.0f}]}},"
        "\"measured\":{{\"compute_ms\":{:.3f},\"wait_ms\":{:.3f},\"peak_bytes\":[{:.0f}],"
        "\"compute_ms_per_sample\":[{:.5f}]}}{}}}",
        stages.empty() ? "" : ",", s.stage, s.first, s.last, fmt::join(s.ranks, ","), fmt::join(s.recompute, ","),
        s.predicted_compute_ms, fmt::join(s.predicted_peak_bytes, ","), s.measured_compute_ms, s.measured_wait_ms,
        fmt::join(s.measured_peak_bytes, ","), fmt::join(s.measured_ms_per_sample, ","),
        s.expected_ms_per_sample.empty()
            ? std::string()
            : fmt::format(",\"expected\":{{\"compute_ms_per_sample\":[{:.5f}]}}", fmt::join(s.expected_ms_per_sample, ",")));
  put(fmt::format("{{\"kind\":\"pipeline\",\"step\":{},\"minibatches\":{},\"predicted\":{{\"minibatch_ms\":{:.3f},"
                  "\"bubble\":{:.4f}}},\"measured\":{{\"minibatch_ms\":{:.3f},\"bubble\":{:.4f}}},\"stages\":[{}]}}",
                  l.step, l.minibatches, l.predicted_minibatch_ms, l.predicted_bubble, l.measured_minibatch_ms,
                  l.measured_bubble, stages));
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
