// Output-directory checks and preparation for dptrain runs.
#include "lib/train/run_dir.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "lib/core/error.h"
#include "lib/core/json.h"
#include "lib/core/stop_signal.h"
#include "lib/train/checkpoint.h"

namespace fs = std::filesystem;

namespace dp {
namespace {

bool holds_run(const RunDir& d) {
  return fs::exists(d.metrics()) || fs::exists(d.summary()) || !list_checkpoints(d.checkpoints()).empty();
}

// The value of "step" in a complete metrics line (a JSON object), or -1.
int64_t step_of(const std::string& line) {
  if (!line.starts_with('{') || !line.ends_with('}')) return -1;
  const auto pos = line.find("\"step\":");
  if (pos == std::string::npos) return -1;
  char* end = nullptr;
  const long long step = std::strtoll(line.c_str() + pos + 7, &end, 10);
  return end != line.c_str() + pos + 7 && *end == ',' ? step : -1;
}

}  // namespace

void write_file_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw RuntimeFailure(tmp, "cannot write", "check free disk space and permissions");
  }
  fs::rename(tmp, path);
}

void check_run_dir(const RunDir& d, bool resume, bool force) {
  if (fs::exists(d.root) && !fs::is_directory(d.root))
    throw UsageError(d.root, "output path exists and is not a directory", "choose another with --out");
  if (!resume && !force && holds_run(d))
    throw UsageError(d.root, "output directory already holds a run",
                     "pass --resume to continue it, --out DIR for a new directory, or --force to replace it");
}

void check_run_dir_writable(const RunDir& d) {
  // The outermost folder this check creates, removed again afterwards with all below it.
  fs::path created;
  std::error_code ec;
  for (fs::path p = fs::absolute(d.checkpoints(), ec); !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    if (ec) break;  // a path through a file: nothing below it can be created
    created = p;
    if (p == p.parent_path()) break;
  }
  ec.clear();
  fs::create_directories(d.checkpoints(), ec);
  const std::string probe = d.checkpoints() + "/.dptrain-write-check";
  if (!ec) {
    std::ofstream(probe) << "dptrain\n";
    if (!fs::exists(probe, ec) || fs::file_size(probe, ec) == 0) ec = std::make_error_code(std::errc::io_error);
    std::error_code ignored;
    fs::remove(probe, ignored);
  }
  std::error_code ignored;
  if (!created.empty()) fs::remove_all(created, ignored);
  if (ec)
    throw UsageError(d.root, "cannot create or write the output directory: " + ec.message(),
                     "choose a writable folder with --out or [job] output_dir");
}

void prepare_run_dir(const RunDir& d, bool resume, bool force, int64_t resume_step) {
  std::error_code ec;
  fs::create_directories(d.checkpoints(), ec);
  if (ec) throw RuntimeFailure(d.root, "cannot create output directory: " + ec.message(), "check permissions");
  fs::remove(d.stopped(), ec);  // a run starts: the earlier one's stop is history
  if (!resume && force) {
    for (const auto& f : list_checkpoints(d.checkpoints())) fs::remove(f);
    fs::remove(d.metrics());
    fs::remove(d.summary());
    fs::remove(d.trace());
  }
  if (resume && fs::exists(d.metrics())) {
    // Keep the complete lines up to the resume point. A run killed mid-write can leave a partial last
    // line (no newline): it and everything after the checkpoint are written again by this run.
    std::ifstream in(d.metrics(), std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::string kept;
    for (size_t begin = 0, end; (end = text.find('\n', begin)) != std::string::npos; begin = end + 1) {
      const std::string line = text.substr(begin, end - begin);
      const int64_t step = step_of(line);
      if (step >= 0 && step <= resume_step) kept += line + '\n';
    }
    write_file_atomic(d.metrics(), kept);
  }
}

std::string stopped_json(const StoppedRun& s) {
  return fmt::format("{{\"signal\": {}, \"signal_name\": {}, \"rank\": {}, \"step\": {}, \"checkpoint\": {}}}\n",
                     s.signal, json_quoted(signal_name(s.signal)), s.rank, s.step, json_quoted(s.checkpoint));
}

}  // namespace dp
