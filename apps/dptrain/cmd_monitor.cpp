// `dptrain monitor RUN_DIR`: its options, and a run directory's view (lib/monitor). On a terminal it
// redraws in place on the alternate screen every --interval seconds until the run finishes (summary.json
// appears) or Ctrl-C, then restores the screen and prints the final view; otherwise (--once, or not a
// terminal) one plain snapshot. --json prints the snapshot as JSON; --plot writes the curves as an SVG.
#include <CLI/CLI.hpp>

#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <memory>
#include <thread>

#include "apps/dptrain/commands.h"
#include "lib/core/error.h"
#include "lib/monitor/render.h"
#include "lib/monitor/run_record.h"

namespace dp::app {
namespace {

struct MonitorCommand {
  std::string run_dir;    // a run's output directory
  bool once = false;      // --once: one plain snapshot, also on a terminal
  bool json = false;      // --json: the snapshot as one JSON object
  std::string plot;       // --plot: write loss, throughput and per-rank wait over time as an SVG
  double interval = 1.0;  // --interval: seconds between redraws on a terminal
  int window = 10;        // --window: the newest logged steps the per-rank figures cover
};

volatile std::sig_atomic_t stop_requested = 0;  // set by Ctrl-C, a hang-up or a termination signal
void request_stop(int) { stop_requested = 1; }

int terminal_width() {
  winsize size{};
  return ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0 ? int(size.ws_col) : 100;
}

// Each line cleared to its end, then everything below: redraws without flicker or leftovers.
void draw_in_place(const std::string& view) {
  std::string screen = "\x1b[H";
  size_t begin = 0;
  for (size_t nl; (nl = view.find('\n', begin)) != std::string::npos; begin = nl + 1)
    screen += view.substr(begin, nl - begin) + "\x1b[K\n";
  screen += "\x1b[J";
  std::fwrite(screen.data(), 1, screen.size(), stdout);
  std::fflush(stdout);
}

int watch_live(monitor::RunReader& reader, const MonitorCommand& cmd) {
  struct sigaction action{};
  action.sa_handler = request_stop;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &action, nullptr);
  std::fputs("\x1b[?1049h\x1b[?25l", stdout);  // alternate screen, cursor hidden
  monitor::Snapshot s;
  const auto slice = std::chrono::milliseconds(50);
  while (!stop_requested) {
    s = monitor::make_snapshot(reader.refresh(), cmd.window);
    if (s.state == "finished") break;
    draw_in_place(monitor::text_view(s, terminal_width()) +
                  "\n(refreshing every " + std::to_string(cmd.interval).substr(0, 4) + " s; Ctrl-C to stop)\n");
    for (auto waited = std::chrono::milliseconds(0); waited < std::chrono::duration<double>(cmd.interval) &&
                                                     !stop_requested; waited += slice)
      std::this_thread::sleep_for(slice);
  }
  std::fputs("\x1b[?25h\x1b[?1049l", stdout);  // back to the normal screen, where the final view stays
  std::fputs(monitor::text_view(s, terminal_width()).c_str(), stdout);
  std::fflush(stdout);
  return stop_requested && s.state != "finished" ? 130 : 0;
}

int cmd_monitor(const MonitorCommand& cmd) {
  monitor::RunReader reader(cmd.run_dir);  // UsageError (exit 2) for a directory that is not a run's
  if (!cmd.plot.empty()) {
    const monitor::Snapshot s = monitor::make_snapshot(reader.refresh(), cmd.window);
    std::ofstream out(cmd.plot);
    if (!out) throw UsageError(cmd.plot, "cannot write the plot", "give a writable FILE.svg to --plot");
    out << monitor::svg_plot(s);
    out.close();
    if (!out) throw RuntimeFailure(cmd.plot, "writing the plot failed", "check the disk");
    if (!cmd.json && !cmd.once) {
      std::printf("wrote %s: %zu logged step(s), %zu evaluation(s), %d rank(s)\n", cmd.plot.c_str(),
                  s.curve.size(), s.evals.size(), s.ranks);
      return 0;
    }
  }
  if (cmd.json) {
    std::fputs(monitor::json_view(monitor::make_snapshot(reader.refresh(), cmd.window)).c_str(), stdout);
    return 0;
  }
  if (cmd.once || !isatty(STDOUT_FILENO)) {
    std::fputs(monitor::text_view(monitor::make_snapshot(reader.refresh(), cmd.window), 100).c_str(), stdout);
    return 0;
  }
  return watch_live(reader, cmd);
}

}  // namespace

void register_monitor(CLI::App& app, Invocation& call) {
  auto opt = std::make_shared<MonitorCommand>();
  auto* cmd = app.add_subcommand("monitor", "watch a running or finished job from its run directory: per-rank "
                                            "speed, share, compute/comm/wait split, memory, loss, progress, ETA "
                                            "and the slow rank");
  cmd->add_option("run_dir", opt->run_dir, "the run's output directory")->required()->type_name("RUN_DIR");
  cmd->add_flag("--once", opt->once, "print one plain snapshot and exit (also on a terminal)");
  cmd->add_flag("--json", opt->json, "print the snapshot as one JSON object and exit");
  cmd->add_option("--plot", opt->plot, "write loss, throughput and per-rank wait over time as an SVG")
      ->type_name("FILE.svg");
  cmd->add_option("--interval", opt->interval, "seconds between redraws on a terminal (default 1)")
      ->check(CLI::Range(0.05, 3600.0))->type_name("SECONDS");
  cmd->add_option("--window", opt->window, "logged steps the per-rank figures cover (default 10)")
      ->check(CLI::Range(1, 1000000))->type_name("STEPS");
  cmd->callback([opt, &call] { call.status = cmd_monitor(*opt); });
}

}  // namespace dp::app
