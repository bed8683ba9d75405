// run_end (run_end.h): reads stopped.json and heartbeat.json (when the ranks wrote them), the summary's
// time and the newest checkpoint, and words how the run ended.
#include "lib/train/run_end.h"

#include <fmt/format.h>

#include <fstream>
#include <iterator>
#include <optional>

#include "lib/core/error.h"
#include "lib/core/stop_signal.h"
#include "lib/monitor/json_value.h"
#include "lib/train/checkpoint.h"
#include "lib/train/watchdog.h"

namespace dp {
namespace {

// A JSON file the ranks wrote into the run directory, or nothing when it is absent or unreadable (it only
// adds detail to the launcher's report).
std::optional<monitor::JsonValue> read_run_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    return monitor::JsonValue::parse(text, path);
  } catch (const Error&) {
    return std::nullopt;
  }
}

// What stopped.json in `dir` says, when the ranks wrote it (they stopped on a signal and saved).
std::optional<StoppedRun> read_stopped(const RunDir& dir) {
  const auto v = read_run_json(dir.stopped());
  if (!v) return std::nullopt;
  return StoppedRun{int(v->number("signal", 0)), int(v->number("rank", -1)), int64_t(v->number("step", 0)),
                    v->text("checkpoint")};
}

// What every rank was doing at its last heartbeat (heartbeat.json, watchdog.h), "" when unknown.
std::string last_heartbeats(const RunDir& dir) {
  const auto v = read_run_json(dir.heartbeat());
  const monitor::JsonValue* ranks = v ? v->find("ranks") : nullptr;
  if (!ranks || !ranks->is_array()) return {};
  std::string out;
  for (const monitor::JsonValue& r : ranks->items())
    out += fmt::format("{}rank {} ({}) in '{}'{}", out.empty() ? "" : "; ", r.number("rank", -1), r.text("host"),
                       r.text("activity"), r.number("silent_s", 0) > 2
                                               ? fmt::format(", silent for {:.0f} s", r.number("silent_s", 0))
                                               : std::string());
  return out;
}

// Stopped on a signal, saved or not: the step and where to continue from.
RunEnd stopped_end(const RunDir& dir, const StoppedRun& stopped, int status) {
  if (status == 0) status = 128 + stopped.signal;  // a rank was signalled
  const auto newest = newest_checkpoint(dir.checkpoints());
  const std::string resume = fmt::format("continue with --resume --out {}", dir.root);
  const std::string sent = signal_name(status > 128 ? status - 128 : stopped.signal);
  const std::string next = !stopped.checkpoint.empty() ? fmt::format("it wrote {}: {}", stopped.checkpoint, resume)
                           : newest ? fmt::format("checkpoints are off; the newest is {}: {}", *newest, resume)
                                    : "checkpoints are off: run it again from the start";
  return {status, {fmt::format("the run stopped on {} after step {}; {}", sent, stopped.step, next)}};
}

// Any other unfinished end: a rank failed, the watchdog ended it, mpirun was stopped hard.
RunEnd failed_end(const RunDir& dir, int status) {
  const std::string how = status == Watchdog::kExitStatus
                              ? "ended: it made no progress for [launch] wait_timeout (exit status 124)"
                          : status > 128 && status - 128 <= 31
                              ? (is_stop_signal(status - 128)
                                     ? "stopped by " + signal_name(status - 128)
                                     : fmt::format("ended: a process was killed by {}", signal_name(status - 128)))
                              : fmt::format("failed (exit status {})", status);
  RunEnd end{status, {}};
  if (const std::string doing = last_heartbeats(dir); !doing.empty())
    end.lines.push_back("at the last heartbeat: " + doing);
  const auto newest = newest_checkpoint(dir.checkpoints());
  end.lines.push_back(fmt::format("the run {}; {}", how,
                                  newest ? fmt::format("its newest checkpoint is {}: continue with --resume --out {}",
                                                       *newest, dir.root)
                                         : "it wrote no checkpoint: run it again from the start"));
  return end;
}

}  // namespace

RunEnd run_end(const RunDir& dir, int status, std::filesystem::file_time_type launched) {
  const std::optional<StoppedRun> stopped = read_stopped(dir);
  if (status == 0 && !stopped) return {};  // finished
  // A stop signal that came after the last step: the ranks finished the run (this launch wrote its
  // summary) before the request could take effect.
  std::error_code ec;
  if (!stopped && status > 128 && is_stop_signal(status - 128) &&
      std::filesystem::last_write_time(dir.summary(), ec) >= launched && !ec)
    return {0, {fmt::format("{} came after the last step: the run finished; wrote {}", signal_name(status - 128),
                            dir.summary())}};
  return stopped ? stopped_end(dir, *stopped, status) : failed_end(dir, status);
}

}  // namespace dp
