// RunReader: metrics.jsonl read from where the last read stopped, line by line; summary.json when present.
#include "lib/monitor/run_record.h"

#include <fmt/format.h>

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "lib/core/error.h"
#include "lib/monitor/json_value.h"

namespace dp::monitor {
namespace fs = std::filesystem;

namespace {

RankPoint rank_point(const JsonValue& v) {
  RankPoint p;
  p.step = int64_t(v.number("step", 0));
  p.epoch = int64_t(v.number("epoch", 0));
  p.rank = int(v.number("rank", 0));
  p.t = v.number("t", 0);
  p.loss = v.number("loss", 0);
  p.samples_per_sec = v.number("samples_per_sec", 0);
  p.local_batch = int64_t(v.number("local_batch", 0));
  p.compute_ms = v.number("compute_ms", 0);
  p.wait_ms = v.number("wait_ms", 0);
  p.comm_ms = v.number("comm_ms", 0);
  p.update_ms = v.number("update_ms", 0);
  p.group = int(v.number("group", -1));
  p.stage = int(v.number("stage", -1));
  p.allocated_peak_bytes = v.number("allocated_peak_bytes", -1);
  p.resident_bytes = v.number("resident_bytes", -1);
  p.gpu_used_bytes = v.number("gpu_used_bytes", -1);
  p.gpu_util_percent = v.number("gpu_util_percent", -1);
  return p;
}

std::optional<RunSummary> read_summary(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  JsonValue v;
  try {
    v = JsonValue::parse(text.str(), path);
  } catch (const DataError&) {
    return std::nullopt;  // written atomically, so this is not ours: show the run as unfinished
  }
  RunSummary s;
  s.language_model = v.find("language_model") && v.find("language_model")->as_bool();
  s.test_accuracy = v.number("test_accuracy", -1);
  s.test_loss = v.number("test_loss", 0);
  s.perplexity = v.number("perplexity", -1);
  if (v.find("val_loss")) s.language_model = true;  // summaries from before language_model was written
  s.samples_per_sec = v.number("samples_per_sec", 0);
  s.wall_seconds = v.number("wall_seconds", 0);
  s.train_seconds = v.number("train_seconds", 0);
  s.steps = int64_t(v.number("steps", 0));
  if (const JsonValue* memory = v.find("memory"); memory && memory->is_array())
    for (const JsonValue& m : memory->items()) {
      s.allocated_peak_bytes.push_back(m.number("allocated_peak_bytes", -1));
      s.resident_peak_bytes.push_back(m.number("resident_peak_bytes", -1));
    }
  return s;
}

}  // namespace

RunReader::RunReader(std::string dir) {
  record_.dir = std::move(dir);
  const fs::path root(record_.dir);
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    throw UsageError(record_.dir, "no such directory", "give the output directory of a run (its --out)");
  if (!fs::exists(root / "metrics.jsonl", ec) && !fs::exists(root / "job.toml", ec))
    throw UsageError(record_.dir, "not a run directory: it has neither metrics.jsonl nor job.toml",
                     "give the output directory of a run (its --out, else runs/<name>)");
}

void RunReader::begin_invocation(const RunStart* start) {
  Invocation inv;
  if (start) inv.start = *start;
  inv.t = time_offset_;
  record_.invocations.push_back(inv);
  record_.pipeline.clear();  // the newest invocation's plan only
}

void RunReader::take_line(const std::string& line, int64_t number) {
  if (line.empty()) return;
  JsonValue v;
  try {
    v = JsonValue::parse(line, fmt::format("{}/metrics.jsonl:{}", record_.dir, number));
  } catch (const DataError&) {
    ++record_.skipped_lines;
    return;
  }
  const std::string kind = v.text("kind");
  // "t" counts from the start of the process that wrote the line: a new invocation (its start line, or
  // in older files a "t" that goes back) goes on from the last line of the one before.
  const double raw_t = v.number("t", 0);
  const bool starts = kind == "start" || record_.invocations.empty() || raw_t < last_raw_t_;
  if (starts && record_.lines > 0) time_offset_ = last_time_;
  last_raw_t_ = raw_t;
  const double t = time_offset_ + raw_t;
  last_time_ = std::max(last_time_, t);
  ++record_.lines;
  if (kind == "start") {
    RunStart s;
    s.name = v.text("name");
    s.strategy = v.text("strategy");
    s.device = v.text("device");
    s.ranks = int(v.number("ranks", 0));
    s.total_steps = int64_t(v.number("total_steps", 0));
    s.steps_per_epoch = int64_t(v.number("steps_per_epoch", 0));
    s.first_step = int64_t(v.number("first_step", 1));
    s.global_batch = int64_t(v.number("global_batch", 0));
    s.language_model = v.find("language_model") && v.find("language_model")->as_bool();
    s.t = t;
    record_.start = s;
    record_.language_model = record_.language_model || s.language_model;
    begin_invocation(&s);
    return;
  }
  if (starts) begin_invocation(nullptr);
  const int invocation = int(record_.invocations.size()) - 1;
  if (kind == "train") {
    record_.train.push_back(rank_point(v));
    record_.train.back().t = t;
    record_.train.back().invocation = invocation;
  } else if (kind == "eval") {
    EvalPoint e{int64_t(v.number("step", 0)), t, v.number("test_loss", 0), v.number("test_accuracy", -1),
                v.number("perplexity", -1), invocation};
    if (e.perplexity >= 0) record_.language_model = true;
    record_.evals.push_back(e);
  } else if (kind == "pipeline") {
    record_.pipeline.clear();
    if (const JsonValue* stages = v.find("stages"); stages && stages->is_array())
      for (const JsonValue& st : stages->items()) {
        const JsonValue* ranks = st.find("ranks");
        const JsonValue* expected = st.find("expected");
        const JsonValue* per_sample = expected ? expected->find("compute_ms_per_sample") : nullptr;
        if (!ranks || !ranks->is_array()) continue;
        for (size_t i = 0; i < ranks->items().size(); ++i) {
          PipelineRank p{int(ranks->items()[i].as_number()), int(st.number("stage", 0)), -1};
          if (per_sample && per_sample->is_array() && i < per_sample->items().size())
            p.expected_ms_per_sample = per_sample->items()[i].as_number();
          record_.pipeline.push_back(p);
        }
      }
  } else if (kind == "groups" || (kind == "regroup" && v.find("adopted") && v.find("adopted")->as_bool())) {
    record_.grouping = v.text("grouping", record_.grouping);
  }
}

const RunRecord& RunReader::refresh() {
  const fs::path metrics = fs::path(record_.dir) / "metrics.jsonl";
  std::error_code ec;
  const uintmax_t size = fs::file_size(metrics, ec);
  struct stat status{};
  const uint64_t identity = ::stat(metrics.c_str(), &status) == 0 ? uint64_t(status.st_ino) : 0;
  if (!ec) {
    // Replaced or truncated (a resumed run rewrites it without the lines after its checkpoint): start over.
    if (size < offset_ || identity != file_identity_) {
      const std::string dir = record_.dir;
      record_ = RunRecord{};
      record_.dir = dir;
      offset_ = 0;
      lines_read_ = 0;
      pending_.clear();
      file_identity_ = identity;
      time_offset_ = last_time_ = last_raw_t_ = 0;
    }
    std::ifstream in(metrics, std::ios::binary);
    in.seekg(std::streamoff(offset_));
    std::string chunk(size_t(size - offset_), '\0');
    in.read(chunk.data(), std::streamsize(chunk.size()));
    chunk.resize(size_t(in.gcount()));
    offset_ += chunk.size();
    pending_ += chunk;
    size_t begin = 0;
    for (size_t nl; (nl = pending_.find('\n', begin)) != std::string::npos; begin = nl + 1)
      take_line(pending_.substr(begin, nl - begin), ++lines_read_);
    pending_.erase(0, begin);  // a line without its newline yet is still being written
    const auto written = fs::last_write_time(metrics, ec);
    if (!ec)
      record_.seconds_since_write =
          std::chrono::duration<double>(fs::file_time_type::clock::now() - written).count();
  }
  record_.summary = read_summary((fs::path(record_.dir) / "summary.json").string());
  if (record_.summary && record_.summary->language_model) {
    record_.language_model = true;
    if (record_.summary->perplexity < 0) record_.summary->perplexity = std::exp(record_.summary->test_loss);
  }
  return record_;
}

}  // namespace dp::monitor
