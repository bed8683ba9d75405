// run_end: every way a launched run can end, from mpirun's status and the files its ranks left in a
// temporary run directory: finished, a stop signal after the last step, stopped on a signal (with its
// checkpoint, with only an older one, with none; sent to the launcher or to a rank), a rank killed,
// the watchdog's timeout with the ranks' last heartbeats, a failure, and unreadable files.
#define BOOST_TEST_MODULE run_end
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "lib/train/checkpoint.h"
#include "lib/train/run_end.h"

namespace fs = std::filesystem;
using Clock = fs::file_time_type::clock;

namespace {

struct RunFolder {
  dp::RunDir dir{(fs::temp_directory_path() / ("dptrain-run-end-" + std::to_string(::getpid()))).string()};
  RunFolder() {
    fs::remove_all(dir.root);
    fs::create_directories(dir.checkpoints());
  }
  ~RunFolder() { fs::remove_all(dir.root); }
  void write(const std::string& path, const std::string& text) const { std::ofstream(path) << text; }
  void stopped(int signal, int64_t step, const std::string& checkpoint) const {
    write(dir.stopped(), dp::stopped_json({signal, 0, step, checkpoint}));
  }
  std::string checkpoint(int64_t step) const {
    const std::string path = dp::checkpoint_path(dir.checkpoints(), step);
    write(path, "x");
    return path;
  }
};

const auto kLongAgo = Clock::now() - std::chrono::hours(1);

}  // namespace

BOOST_AUTO_TEST_CASE(finished_says_nothing) {
  const RunFolder f;
  const dp::RunEnd e = dp::run_end(f.dir, 0, kLongAgo);
  BOOST_TEST(e.status == 0);
  BOOST_TEST(e.lines.empty());
}

BOOST_AUTO_TEST_CASE(stop_signal_after_the_last_step_is_a_finished_run) {
  const RunFolder f;
  const auto launched = Clock::now() - std::chrono::seconds(10);
  f.write(f.dir.summary(), "{}");
  const dp::RunEnd e = dp::run_end(f.dir, 128 + SIGTERM, launched);
  BOOST_TEST(e.status == 0);
  BOOST_REQUIRE(e.lines.size() == 1u);
  BOOST_TEST(e.lines[0] == "SIGTERM came after the last step: the run finished; wrote " + f.dir.summary());
}

BOOST_AUTO_TEST_CASE(a_summary_from_an_earlier_launch_does_not_count) {
  const RunFolder f;
  f.write(f.dir.summary(), "{}");
  const dp::RunEnd e = dp::run_end(f.dir, 128 + SIGINT, Clock::now() + std::chrono::hours(1));
  BOOST_TEST(e.status == 128 + SIGINT);
  BOOST_REQUIRE(e.lines.size() == 1u);
  BOOST_TEST(e.lines[0] == "the run stopped by SIGINT; it wrote no checkpoint: run it again from the start");
}

BOOST_AUTO_TEST_CASE(stopped_with_its_checkpoint) {
  const RunFolder f;
  const std::string ckpt = f.checkpoint(7);
  f.stopped(SIGTERM, 7, ckpt);
  const dp::RunEnd e = dp::run_end(f.dir, 128 + SIGTERM, kLongAgo);
  BOOST_TEST(e.status == 128 + SIGTERM);
  BOOST_REQUIRE(e.lines.size() == 1u);
  BOOST_TEST(e.lines[0] == "the run stopped on SIGTERM after step 7; it wrote " + ckpt +
                               ": continue with --resume --out " + f.dir.root);
}

BOOST_AUTO_TEST_CASE(a_signalled_rank_gives_its_signal_as_status) {
  const RunFolder f;
  f.stopped(SIGUSR1, 3, "c.ckpt");
  const dp::RunEnd e = dp::run_end(f.dir, 0, kLongAgo);  // mpirun itself ended normally
  BOOST_TEST(e.status == 128 + SIGUSR1);
  BOOST_REQUIRE(e.lines.size() == 1u);
  BOOST_TEST(e.lines[0] == "the run stopped on SIGUSR1 after step 3; it wrote c.ckpt: continue with --resume --out " +
                               f.dir.root);
}

BOOST_AUTO_TEST_CASE(stopped_with_checkpoints_off_names_the_newest) {
  const RunFolder f;
  f.checkpoint(2);
  const std::string newest = f.checkpoint(4);
  f.stopped(SIGINT, 5, "");
  const dp::RunEnd e = dp::run_end(f.dir, 128 + SIGINT, kLongAgo);
  BOOST_TEST(e.status == 128 + SIGINT);
  BOOST_REQUIRE(e.lines.size() == 1u);
  BOOST_TEST(e.lines[0] == "the run stopped on SIGINT after step 5; checkpoints are off; the newest is " + newest +
                               ": continue with --resume --out " + f.dir.root);
}

BOOST_AUTO_TEST_CASE(stopped_without_any_checkpoint_starts_again) {
  const RunFolder f;
  f.stopped(SIGHUP, 1, "");
  const dp::RunEnd e = dp::run_end(f.dir, 0, kLongAgo);
  BOOST_TEST(e.status == 128 + SIGHUP);
  BOOST_REQUIRE(e.lines.size() == 1u);
  BOOST_TEST(e.lines[0] == "the run stopped on SIGHUP after step 1; checkpoints are off: run it again from the start");
}

BOOST_AUTO_TEST_CASE(a_killed_rank_with_the_last_heartbeats) {
  const RunFolder f;
  const std::string newest = f.checkpoint(10);
  f.write(f.dir.heartbeat(), R"({"ranks": [{"rank": 0, "host": "a", "activity": "allreduce", "silent_s": 0.5},)"
                             R"( {"rank": 1, "host": "b", "activity": "forward", "silent_s": 6.2}]})");
  const dp::RunEnd e = dp::run_end(f.dir, 128 + SIGKILL, kLongAgo);
  BOOST_TEST(e.status == 128 + SIGKILL);
  BOOST_REQUIRE(e.lines.size() == 2u);
  BOOST_TEST(e.lines[0] == "at the last heartbeat: rank 0 (a) in 'allreduce'; rank 1 (b) in 'forward', silent for 6 s");
  BOOST_TEST(e.lines[1] == "the run ended: a process was killed by SIGKILL; its newest checkpoint is " + newest +
                               ": continue with --resume --out " + f.dir.root);
}

BOOST_AUTO_TEST_CASE(the_watchdog_timeout) {
  const RunFolder f;
  const dp::RunEnd e = dp::run_end(f.dir, 124, kLongAgo);
  BOOST_TEST(e.status == 124);
  BOOST_REQUIRE(e.lines.size() == 1u);
  BOOST_TEST(e.lines[0] == "the run ended: it made no progress for [launch] wait_timeout (exit status 124); it wrote "
                           "no checkpoint: run it again from the start");
}

BOOST_AUTO_TEST_CASE(a_failure_keeps_its_status) {
  const RunFolder f;
  const dp::RunEnd e = dp::run_end(f.dir, 1, kLongAgo);
  BOOST_TEST(e.status == 1);
  BOOST_REQUIRE(e.lines.size() == 1u);
  BOOST_TEST(e.lines[0] == "the run failed (exit status 1); it wrote no checkpoint: run it again from the start");
}

BOOST_AUTO_TEST_CASE(unreadable_files_add_nothing) {
  const RunFolder f;
  f.write(f.dir.stopped(), "{not json");
  f.write(f.dir.heartbeat(), "[1, 2");
  BOOST_TEST(dp::run_end(f.dir, 0, kLongAgo).lines.empty());  // no stopped.json to go by: finished
  const dp::RunEnd e = dp::run_end(f.dir, 2, kLongAgo);
  BOOST_TEST(e.status == 2);
  BOOST_REQUIRE(e.lines.size() == 1u);
  BOOST_TEST(e.lines[0] == "the run failed (exit status 2); it wrote no checkpoint: run it again from the start");
}
