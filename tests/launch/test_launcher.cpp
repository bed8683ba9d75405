#define BOOST_TEST_MODULE launcher
#include <boost/test/unit_test.hpp>

// The launcher: the mpirun command built from [launch] and facts about the host (a pure function, tested
// with a hand-made LaunchHost and a fake environment), detection of an enclosing MPI job, shell quoting
// of the printed command, and spawning a program and returning its exit status.

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lib/core/error.h"
#include "lib/launch/launcher.h"

extern char** environ;

namespace {

using Args = std::vector<std::string>;
using Env = std::map<std::string, std::string>;

// A getenv over a fixed map. The map is copied into the closure so the host outlives the caller's map.
std::function<const char*(const char*)> fake_getenv(Env env) {
  auto shared = std::make_shared<Env>(std::move(env));
  return [shared](const char* name) -> const char* {
    const auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

dp::LaunchHost host(bool root, int cores, Env env = {}) {
  dp::LaunchHost h;
  h.is_root = root;
  h.cores = cores;
  h.self_exe = "/opt/dp/bin/dptrain";
  for (const auto& [name, value] : env) h.environment.push_back(name + "=" + value);
  return h;
}

dp::LaunchSection launch(int64_t ranks, std::vector<std::string> hosts = {}, std::vector<std::string> extra = {}) {
  dp::LaunchSection l;
  l.ranks = ranks;
  l.hosts = std::move(hosts);
  l.mpirun_args = std::move(extra);
  return l;
}

bool has(const Args& a, const std::string& s) { return std::find(a.begin(), a.end(), s) != a.end(); }

// Index of the first occurrence of the contiguous sequence `seq` in `a`, or -1.
long find_seq(const Args& a, const Args& seq) {
  const auto it = std::search(a.begin(), a.end(), seq.begin(), seq.end());
  return it == a.end() ? -1 : long(it - a.begin());
}

// The value following flag `flag`, or "" when absent.
std::string value_of(const Args& a, const std::string& flag) {
  const auto it = std::find(a.begin(), a.end(), flag);
  return it == a.end() || it + 1 == a.end() ? std::string() : *(it + 1);
}

// Names passed with -x, in order.
Args forwarded(const Args& a) {
  Args names;
  for (size_t i = 0; i + 1 < a.size(); ++i)
    if (a[i] == "-x") names.push_back(a[i + 1]);
  return names;
}

std::string joined(const Args& a) {
  std::string s;
  for (const auto& x : a) s += (s.empty() ? "" : " ") + x;
  return s;
}

const Args kSelf = {"run", "job.toml", "--out", "runs/a b"};

}  // namespace

// --- mpirun_command --------------------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(mpirun_command)

BOOST_AUTO_TEST_CASE(starts_with_mpirun_and_np_from_ranks) {
  for (int64_t ranks : {1, 2, 3, 16}) {
    const Args cmd = dp::mpirun_command(launch(ranks), host(false, 64), kSelf);
    BOOST_TEST_CONTEXT(joined(cmd)) {
      BOOST_REQUIRE_GE(cmd.size(), 3u);
      BOOST_TEST(cmd[0] == "mpirun");
      BOOST_TEST(cmd[1] == "-np");
      BOOST_TEST(cmd[2] == std::to_string(ranks));
      BOOST_TEST(std::count(cmd.begin(), cmd.end(), "-np") == 1);
    }
  }
}

BOOST_AUTO_TEST_CASE(uses_the_configured_mpirun) {
  auto l = launch(2);
  l.mpirun = "/usr/lib64/openmpi/bin/mpirun";
  const Args cmd = dp::mpirun_command(l, host(false, 4), kSelf);
  BOOST_TEST(cmd.front() == "/usr/lib64/openmpi/bin/mpirun");
}

BOOST_AUTO_TEST_CASE(allow_run_as_root_only_for_root) {
  const Args as_root = dp::mpirun_command(launch(2), host(true, 4), kSelf);
  const Args as_user = dp::mpirun_command(launch(2), host(false, 4), kSelf);
  BOOST_TEST(std::count(as_root.begin(), as_root.end(), "--allow-run-as-root") == 1);
  BOOST_TEST(!has(as_user, "--allow-run-as-root"));
  // Also with hosts.
  const Args remote_user = dp::mpirun_command(launch(4, {"a:2", "b:2"}), host(false, 4), kSelf);
  const Args remote_root = dp::mpirun_command(launch(4, {"a:2", "b:2"}), host(true, 4), kSelf);
  BOOST_TEST(!has(remote_user, "--allow-run-as-root"));
  BOOST_TEST(has(remote_root, "--allow-run-as-root"));
}

BOOST_AUTO_TEST_CASE(local_transport_flags_only_without_hosts) {
  const Args local = dp::mpirun_command(launch(2), host(false, 4), kSelf);
  BOOST_TEST_CONTEXT(joined(local)) {
    BOOST_TEST(find_seq(local, {"--mca", "btl", "self,vader"}) >= 0);
    BOOST_TEST(find_seq(local, {"--mca", "oob_tcp_if_include", "lo"}) >= 0);
    BOOST_TEST(!has(local, "--host"));
  }
  const Args remote = dp::mpirun_command(launch(4, {"a:2", "b:2"}), host(false, 4), kSelf);
  BOOST_TEST_CONTEXT(joined(remote)) {
    BOOST_TEST(!has(remote, "self,vader"));
    BOOST_TEST(!has(remote, "oob_tcp_if_include"));
    BOOST_TEST(!has(remote, "lo"));
    BOOST_TEST(!has(remote, "btl"));
  }
}

// Across machines mpirun notices a lost machine by TCP keepalive within about half of wait_timeout
// (OpenMPI's default would take 8 minutes); on one machine, or with no timeout, nothing is set.
BOOST_AUTO_TEST_CASE(keepalive_across_machines_from_wait_timeout) {
  dp::LaunchSection l = launch(4, {"a:2", "b:2"});
  l.wait_timeout = 20;
  const Args remote = dp::mpirun_command(l, host(false, 4), kSelf);
  BOOST_TEST_CONTEXT(joined(remote)) {
    BOOST_TEST(find_seq(remote, {"--mca", "oob_tcp_keepalive_time", "2"}) >= 0);
    BOOST_TEST(find_seq(remote, {"--mca", "oob_tcp_keepalive_intvl", "1"}) >= 0);
    BOOST_TEST(find_seq(remote, {"--mca", "oob_tcp_keepalive_probes", "6"}) >= 0);
  }
  l.wait_timeout = 0;
  BOOST_TEST(!has(dp::mpirun_command(l, host(false, 4), kSelf), "oob_tcp_keepalive_time"));
  dp::LaunchSection local = launch(2);
  local.wait_timeout = 20;
  BOOST_TEST(!has(dp::mpirun_command(local, host(false, 4), kSelf), "oob_tcp_keepalive_time"));
}

BOOST_AUTO_TEST_CASE(oversubscribe_only_when_ranks_exceed_cores) {
  struct Case {
    int64_t ranks;
    int cores;
    bool over;
  };
  for (const Case c : {Case{1, 1, false}, Case{2, 2, false}, Case{2, 4, false}, Case{3, 2, true},
                       Case{4, 2, true}, Case{64, 16, true}}) {
    const Args cmd = dp::mpirun_command(launch(c.ranks), host(false, c.cores), kSelf);
    BOOST_TEST_CONTEXT(c.ranks << " ranks on " << c.cores << " cores: " << joined(cmd)) {
      BOOST_TEST(has(cmd, "--oversubscribe") == c.over);
      BOOST_TEST((find_seq(cmd, {"--bind-to", "none"}) >= 0) == c.over);
    }
  }
  // With hosts, slots come from the host list: never --oversubscribe, whatever the local cores.
  const Args remote = dp::mpirun_command(launch(8, {"a:4", "b:4"}), host(false, 1), kSelf);
  BOOST_TEST(!has(remote, "--oversubscribe"));
  BOOST_TEST(!has(remote, "--bind-to"));
}

BOOST_AUTO_TEST_CASE(far_more_ranks_than_cores_is_refused_on_one_machine) {
  BOOST_CHECK_NO_THROW(dp::mpirun_command(launch(16), host(false, 2), kSelf));  // 8 per core: emulation
  BOOST_CHECK_THROW(dp::mpirun_command(launch(17), host(false, 2), kSelf), dp::UsageError);
  BOOST_CHECK_THROW(dp::mpirun_command(launch(500), host(false, 2), kSelf), dp::UsageError);
  BOOST_CHECK_NO_THROW(dp::mpirun_command(launch(500, {"a:250", "b:250"}), host(false, 2), kSelf));  // elsewhere
}

BOOST_AUTO_TEST_CASE(host_list_joined_with_commas) {
  const Args two = dp::mpirun_command(launch(4, {"a:2", "b:2"}), host(false, 4), kSelf);
  BOOST_TEST(find_seq(two, {"--host", "a:2,b:2"}) >= 0, joined(two));
  BOOST_TEST(std::count(two.begin(), two.end(), "--host") == 1);
  const Args one = dp::mpirun_command(launch(2, {"node7:2"}), host(false, 4), kSelf);
  BOOST_TEST(value_of(one, "--host") == "node7:2");
}

BOOST_AUTO_TEST_CASE(forwards_only_variables_that_are_set) {
  const Args none = dp::mpirun_command(launch(2), host(false, 4, {}), kSelf);
  BOOST_TEST(forwarded(none).empty(), joined(none));
  BOOST_TEST(!has(none, "-x"));

  const Args some = dp::mpirun_command(launch(2), host(false, 4, {{"PATH", "/usr/bin"}, {"OMP_NUM_THREADS", "1"}}),
                                       kSelf);
  BOOST_TEST(forwarded(some) == (Args{"PATH", "OMP_NUM_THREADS"}), boost::test_tools::per_element());

  const Env all = {{"PATH", "/usr/bin"},
                   {"LD_LIBRARY_PATH", "/opt/lib"},
                   {"OMP_NUM_THREADS", "2"},
                   {"OPENBLAS_NUM_THREADS", "1"},
                   {"OPENBLAS_CORETYPE", "Haswell"},
                   {"OPENBLAS_L2_SIZE", "1048576"},
                   {"HOME", "/root"},
                   {"SECRET_TOKEN", "x"}};
  const Args every = dp::mpirun_command(launch(2), host(false, 4, all), kSelf);
  const Args names = forwarded(every);
  for (const char* v : {"PATH", "LD_LIBRARY_PATH", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE",
                        "OPENBLAS_L2_SIZE"})
    BOOST_TEST(std::count(names.begin(), names.end(), v) == 1, v << " forwarded once in " << joined(every));
  BOOST_TEST(!has(names, "HOME"));
  BOOST_TEST(!has(names, "SECRET_TOKEN"));
  // -x names only, never NAME=VALUE (values must not leak into the printed command).
  for (const auto& n : names) BOOST_TEST(n.find('=') == std::string::npos, n);
}

BOOST_AUTO_TEST_CASE(forwards_dptrain_variables_from_the_environment) {
  const Args cmd = dp::mpirun_command(launch(2), host(false, 4, {{"DPTRAIN_TEST_LAUNCHER_VAR", "1"}}), kSelf);
  BOOST_TEST(has(forwarded(cmd), "DPTRAIN_TEST_LAUNCHER_VAR"), joined(cmd));
  const Args without = dp::mpirun_command(launch(2), host(false, 4), kSelf);
  BOOST_TEST(!has(forwarded(without), "DPTRAIN_TEST_LAUNCHER_VAR"));
}

BOOST_AUTO_TEST_CASE(host_getenv_reads_its_own_environment) {
  const auto h = host(false, 1, {{"A", "1"}, {"AB", "2"}, {"EMPTY", ""}});
  BOOST_TEST(std::string(h.getenv("A")) == "1");
  BOOST_TEST(std::string(h.getenv("AB")) == "2");
  BOOST_TEST(std::string(h.getenv("EMPTY")).empty());
  BOOST_TEST(h.getenv("ABC") == nullptr);
  BOOST_TEST(h.getenv("") == nullptr);
}

BOOST_AUTO_TEST_CASE(mpirun_args_verbatim_before_the_executable) {
  const Args extra = {"--mca", "pml", "ob1", "--report-bindings", "-x", "FOO=bar baz", ""};
  for (const auto& hosts : {std::vector<std::string>{}, std::vector<std::string>{"a:2", "b:2"}}) {
    const Args cmd = dp::mpirun_command(launch(4, hosts, extra), host(true, 2, {{"PATH", "/bin"}}), kSelf);
    BOOST_TEST_CONTEXT(joined(cmd)) {
      const long at = find_seq(cmd, extra);
      BOOST_REQUIRE_GE(at, 0);
      // Directly followed by the executable.
      BOOST_REQUIRE_LT(size_t(at) + extra.size(), cmd.size());
      BOOST_TEST(cmd[size_t(at) + extra.size()] == "/opt/dp/bin/dptrain");
      // After dptrain's own flags (so the user can override them).
      BOOST_TEST(find_seq(cmd, {"-x", "PATH"}) < at);
      BOOST_TEST(find_seq(cmd, {"-np", "4"}) < at);
    }
  }
}

BOOST_AUTO_TEST_CASE(executable_and_self_args_last_in_order) {
  const Args self = {"run", "my job.toml", "--set", "train.epochs=3", "--set=log.progress=plain", "--resume", ""};
  for (const bool root : {false, true})
    for (const auto& hosts : {std::vector<std::string>{}, std::vector<std::string>{"n1:8"}}) {
      const Args cmd = dp::mpirun_command(launch(3, hosts, {"--tag-output"}), host(root, 2, {{"PATH", "/bin"}}), self);
      BOOST_TEST_CONTEXT(joined(cmd)) {
        BOOST_REQUIRE_GE(cmd.size(), self.size() + 1);
        const size_t exe = cmd.size() - self.size() - 1;
        BOOST_TEST(cmd[exe] == "/opt/dp/bin/dptrain");
        BOOST_TEST(Args(cmd.begin() + long(exe) + 1, cmd.end()) == self, boost::test_tools::per_element());
        BOOST_TEST(std::count(cmd.begin(), cmd.end(), "/opt/dp/bin/dptrain") == 1);
      }
    }
  // No self args: the executable is the last word.
  const Args bare = dp::mpirun_command(launch(1), host(false, 1), {});
  BOOST_TEST(bare.back() == "/opt/dp/bin/dptrain");
}

BOOST_AUTO_TEST_CASE(full_local_command) {
  const Args cmd = dp::mpirun_command(launch(4), host(true, 2, {{"PATH", "/bin"}}), {"run", "j.toml"});
  const Args expected = {"mpirun", "-np", "4", "--stdin", "none", "--allow-run-as-root", "--mca", "btl", "self,vader", "--mca",
                         "oob_tcp_if_include", "lo", "--oversubscribe", "--bind-to", "none", "-x", "PATH",
                         "/opt/dp/bin/dptrain", "run", "j.toml"};
  BOOST_TEST(cmd == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

// --- inside_mpi_job --------------------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(inside_mpi_job)

BOOST_AUTO_TEST_CASE(launcher_variables) {
  BOOST_TEST(dp::inside_mpi_job(fake_getenv({{"OMPI_COMM_WORLD_SIZE", "2"}})));
  BOOST_TEST(dp::inside_mpi_job(fake_getenv({{"PMIX_RANK", "0"}})));
  BOOST_TEST(dp::inside_mpi_job(fake_getenv({{"PMI_RANK", "1"}})));
  BOOST_TEST(dp::inside_mpi_job(fake_getenv({{"OMPI_COMM_WORLD_SIZE", "4"}, {"PMIX_RANK", "3"}})));
}

BOOST_AUTO_TEST_CASE(slurm_step_needs_step_and_proc_id) {
  BOOST_TEST(dp::inside_mpi_job(fake_getenv({{"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "0"}, {"SLURM_JOB_ID", "9"}})));
  BOOST_TEST(dp::inside_mpi_job(fake_getenv({{"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "0"}})));
  // An salloc/sbatch shell: job variables, but no step -> dptrain must launch itself.
  BOOST_TEST(!dp::inside_mpi_job(fake_getenv({{"SLURM_JOB_ID", "1234"}, {"SLURM_NTASKS", "4"}})));
  BOOST_TEST(!dp::inside_mpi_job(fake_getenv({{"SLURM_JOB_ID", "1234"}, {"SLURM_STEP_ID", "0"}})));
  BOOST_TEST(!dp::inside_mpi_job(fake_getenv({{"SLURM_JOB_ID", "1234"}, {"SLURM_PROCID", "0"}})));
}

BOOST_AUTO_TEST_CASE(plain_environment) {
  BOOST_TEST(!dp::inside_mpi_job(fake_getenv({})));
  BOOST_TEST(!dp::inside_mpi_job(fake_getenv({{"PATH", "/bin"}, {"HOME", "/root"}, {"OMP_NUM_THREADS", "1"}})));
}

BOOST_AUTO_TEST_SUITE_END()

// --- shell_line ------------------------------------------------------------------------------------------

namespace {

// Runs `line` with sh and returns what `printf '%s\0' ARGS...` printed, split at NULs.
Args through_sh(const std::string& line) {
  std::FILE* p = ::popen(line.c_str(), "r");
  BOOST_REQUIRE(p);
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  BOOST_REQUIRE_EQUAL(::pclose(p), 0);
  Args words;
  size_t start = 0;
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i] == '\0') {
      words.push_back(out.substr(start, i - start));
      start = i + 1;
    }
  return words;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(shell_line)

BOOST_AUTO_TEST_CASE(plain_words_unquoted) {
  BOOST_TEST(dp::shell_line({"mpirun", "-np", "2", "--host", "a:2,b:2", "/usr/bin/dptrain", "--set=x.y=1"}) ==
             "mpirun -np 2 --host a:2,b:2 /usr/bin/dptrain --set=x.y=1");
  BOOST_TEST(dp::shell_line({}) == "");
}

BOOST_AUTO_TEST_CASE(quotes_where_needed) {
  BOOST_TEST(dp::shell_line({"run", "my job.toml"}) == "run 'my job.toml'");
  BOOST_TEST(dp::shell_line({"it's"}) == R"('it'\''s')");
  BOOST_TEST(dp::shell_line({"a", "", "b"}) == "a '' b");
  BOOST_TEST(dp::shell_line({""}) == "''");
  BOOST_TEST(dp::shell_line({"$HOME"}) == "'$HOME'");
  BOOST_TEST(dp::shell_line({"model.hidden=[16]"}) == "'model.hidden=[16]'");
}

BOOST_AUTO_TEST_CASE(round_trips_through_sh) {
  const Args words = {"plain", "two words", "it's", "", "'", "''", "$HOME", "`id`", "a\"b", "back\\slash",
                      "*", "semi;colon", "new\nline", "tab\there", "~", "!x", "model.hidden=[16, 32]"};
  Args cmd = {"printf", "%s\\0"};
  cmd.insert(cmd.end(), words.begin(), words.end());
  const Args got = through_sh(dp::shell_line(cmd));
  BOOST_TEST(got == words, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

// --- run_and_wait ----------------------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(run_and_wait)

BOOST_AUTO_TEST_CASE(returns_exit_status) {
  BOOST_TEST(dp::run_and_wait({"sh", "-c", "exit 3"}) == 3);
  BOOST_TEST(dp::run_and_wait({"sh", "-c", "exit 0"}) == 0);
  BOOST_TEST(dp::run_and_wait({"true"}) == 0);
  BOOST_TEST(dp::run_and_wait({"false"}) == 1);
  BOOST_TEST(dp::run_and_wait({"sh", "-c", "exit 255"}) == 255);
  // Arguments are passed verbatim (no shell in between).
  BOOST_TEST(dp::run_and_wait({"sh", "-c", "test \"$1\" = 'a b;c' && exit 7", "sh", "a b;c"}) == 7);
}

BOOST_AUTO_TEST_CASE(killed_by_signal_is_128_plus_signal) {
  BOOST_TEST(dp::run_and_wait({"sh", "-c", "kill -KILL $$"}) == 128 + SIGKILL);
  BOOST_TEST(dp::run_and_wait({"sh", "-c", "kill -TERM $$"}) == 128 + SIGTERM);
  BOOST_TEST(dp::run_and_wait({"sh", "-c", "kill -SEGV $$"}) == 128 + SIGSEGV);
}

BOOST_AUTO_TEST_CASE(child_gets_default_sigint_and_handler_is_restored) {
  // The caller handles SIGINT only while waiting; the child starts with the default action.
  auto* const before = ::signal(SIGINT, SIG_DFL);
  BOOST_TEST(dp::run_and_wait({"sh", "-c", "kill -INT $$; exit 9"}) == 128 + SIGINT);
  auto* const after = ::signal(SIGINT, before);
  BOOST_TEST((after == SIG_DFL), "SIGINT disposition not restored after run_and_wait");
}

std::string read_text(const std::string& path) {
  std::string text;
  if (std::FILE* f = std::fopen(path.c_str(), "r")) {
    char buf[256];
    while (const size_t n = std::fread(buf, 1, sizeof buf, f)) text.append(buf, n);
    std::fclose(f);
  }
  return text;
}

// The child runs in a process group of its own (a terminal's Ctrl-C reaches only the launcher).
BOOST_AUTO_TEST_CASE(child_has_its_own_process_group) {
  BOOST_TEST(dp::run_and_wait({"sh", "-c", "test \"$(ps -o pgid= -p $$ | tr -d ' ')\" = $$"}) == 0);
}

// A stop signal sent to the launcher (here the test process, the child's parent). In forward mode it goes
// on unchanged; in request_stop mode the first goes on as SIGUSR1, a second within a second is the same
// request, and one a second or more later goes on as SIGTERM. The status is 128 + the first signal.
BOOST_AUTO_TEST_CASE(forward_passes_the_signal_on) {
  BOOST_TEST(dp::run_and_wait({"sh", "-c", "trap 'exit 5' HUP; kill -HUP $PPID; sleep 20 & wait"}) == 128 + SIGHUP);
}

BOOST_AUTO_TEST_CASE(request_stop_sends_sigusr1_then_sigterm) {
  using dp::OnSignal;
  // The child stops cleanly on SIGUSR1: the launcher's status is still its own signal's.
  BOOST_TEST(dp::run_and_wait({"sh", "-c", "trap 'exit 0' USR1; kill -TERM $PPID; sleep 20 & wait"},
                              OnSignal::request_stop) == 128 + SIGTERM);
  BOOST_TEST(dp::run_and_wait({"sh", "-c", "trap 'exit 0' USR1; kill -INT $PPID; sleep 20 & wait"},
                              OnSignal::request_stop) == 128 + SIGINT);
  // Two signals at once are one request (the child gets SIGUSR1 once and no SIGTERM) ...
  const std::string file = "/tmp/dptrain-test-run-and-wait-" + std::to_string(::getpid());
  const std::string once = "n=0; trap 'n=$((n+1))' USR1; trap 'echo TERM >" + file + "; exit 9' TERM; "
                           "kill -TERM $PPID; kill -TERM $PPID; sleep 1.5; echo \"USR1 x$n\" >" + file;
  BOOST_TEST(dp::run_and_wait({"sh", "-c", once}, OnSignal::request_stop) == 128 + SIGTERM);
  BOOST_TEST(read_text(file) == "USR1 x1\n");
  // ... one more, later, ends the child with SIGTERM.
  const std::string twice = "trap : USR1; trap 'echo TERM >" + file + "; exit 9' TERM; kill -TERM $PPID; "
                            "sleep 1.3; kill -TERM $PPID; sleep 20 & wait";
  BOOST_TEST(dp::run_and_wait({"sh", "-c", twice}, OnSignal::request_stop) == 128 + SIGTERM);
  BOOST_TEST(read_text(file) == "TERM\n");
  std::remove(file.c_str());
}

BOOST_AUTO_TEST_CASE(missing_program_is_a_usage_error) {
  BOOST_CHECK_THROW(dp::run_and_wait({"/nonexistent/dir/mpirun"}), dp::UsageError);
  BOOST_CHECK_THROW(dp::run_and_wait({"dptrain-test-no-such-program-7f3a"}), dp::UsageError);
  try {
    dp::run_and_wait({"dptrain-test-no-such-program-7f3a", "-np", "2"});
    BOOST_FAIL("no exception");
  } catch (const dp::UsageError& e) {
    BOOST_TEST(e.exit_code() == 2);
    BOOST_TEST(e.where() == "dptrain-test-no-such-program-7f3a");
    BOOST_TEST(e.line().find("error") != std::string::npos, e.line());
    BOOST_TEST(!e.hint().empty());
  }
  // Not restartable: SIGINT disposition is restored after the failure too.
  auto* const before = ::signal(SIGINT, SIG_DFL);
  BOOST_CHECK_THROW(dp::run_and_wait({"/nonexistent/dir/mpirun"}), dp::UsageError);
  BOOST_TEST((::signal(SIGINT, before) == SIG_DFL));
}

BOOST_AUTO_TEST_SUITE_END()
