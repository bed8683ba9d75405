// Output-directory checks and preparation for dptrain runs.
#include "lib/train/run_dir.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "lib/core/error.h"
#include "lib/train/checkpoint.h"

namespace fs = std::filesystem;

namespace dp {
namespace {

bool holds_run(const RunDir& d) {
  return fs::exists(d.metrics()) || fs::exists(d.summary()) || !list_checkpoints(d.checkpoints()).empty();
}

// The value of "step" in a metrics line, or -1.
int64_t step_of(const std::string& line) {
  const auto pos = line.find("\"step\":");
  if (pos == std::string::npos) return -1;
  return std::strtoll(line.c_str() + pos + 7, nullptr, 10);
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

void prepare_run_dir(const RunDir& d, bool resume, bool force, int64_t resume_step) {
  std::error_code ec;
  fs::create_directories(d.checkpoints(), ec);
  if (ec) throw RuntimeFailure(d.root, "cannot create output directory: " + ec.message(), "check permissions");
  if (!resume && force) {
    for (const auto& f : list_checkpoints(d.checkpoints())) fs::remove(f);
    fs::remove(d.metrics());
    fs::remove(d.summary());
  }
  if (resume && fs::exists(d.metrics())) {
    std::ifstream in(d.metrics());
    std::ostringstream kept;
    for (std::string line; std::getline(in, line);)
      if (step_of(line) <= resume_step) kept << line << '\n';
    write_file_atomic(d.metrics(), kept.str());
  }
}

}  // namespace dp
