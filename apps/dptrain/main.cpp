// dptrain's command line: creates the app, lets each subcommand register its options (cmd_<name>.cpp),
// parses, and turns errors from libdptrain into one line on stderr and an exit status: 2 for bad input,
// 1 for failures while running.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <new>
#include <string_view>

#include "apps/dptrain/commands.h"
#include "lib/core/backend.h"
#include "lib/core/error.h"
#include "lib/core/stop_signal.h"
#include "lib/launch/launcher.h"
#include "lib/machine/machine.h"
#include "lib/measure/measure.h"

namespace dp::app {
namespace {

// "dptrain 0.1.0", the compiled-in backends and this machine.
std::string version_text() {
  return fmt::format("dptrain {}\nbackends: {}\nmachine: {}", DPTRAIN_VERSION, describe_backends(probe_backends()),
                     this_machine().line());
}

// One line for a command-line mistake, naming an unknown subcommand instead of CLI11's "a subcommand is
// required".
std::string usage_error_line(const CLI::App& app, int argc, char** argv, const CLI::ParseError& e) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  const std::string valid = fmt::format("{}", fmt::join(names, ", "));
  if (argc > 1 && argv[1][0] != '-' && std::find(names.begin(), names.end(), argv[1]) == names.end())
    return dp::UsageError("", fmt::format("unknown subcommand '{}'", argv[1]), "valid: " + valid).line();
  return dp::UsageError("", e.what(), "see 'dptrain --help'").line();
}

// Parses and runs the subcommand; every error becomes one line on stderr and an exit status.
int parse_and_run(CLI::App& app, int argc, char** argv, const Invocation& call) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "dptrain: %s\n", usage_error_line(app, argc, argv, e).c_str());
    return 2;
  } catch (const dp::Error& e) {
    std::fprintf(stderr, "dptrain: %s\n", e.line().c_str());
    return e.exit_code();
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "dptrain: error: out of memory (hint: 'dptrain estimate JOB' says what each rank needs; "
                         "a smaller model, batch or more ranks need less)\n");
    return 1;
  }
  return call.status;
}

}  // namespace
}  // namespace dp::app

int main(int argc, char** argv) {
  using namespace dp::app;
  // A rank of a training job: from its first instruction, a stop signal asks for a checkpoint (stop_signal.h).
  if (argc > 1 && std::string_view(argv[1]) == "run" && dp::inside_mpi_job([](const char* v) { return std::getenv(v); }))
    dp::install_stop_handlers();
  try {  // before anything runs: may re-execute this process with the BLAS kernels this CPU can run
    dp::machine::settle_blas_kernels(argv);
  } catch (const dp::Error& e) {
    std::fprintf(stderr, "dptrain: %s\n", e.line().c_str());
    return e.exit_code();
  }
  CLI::App app{"dptrain: data-parallel deep-learning training for clusters whose machines and links differ.\n"
               "Jobs are TOML files (man dptrain-job(5))."};
  app.set_version_flag("--version", [] { return version_text(); }, "print the version and backends, then exit");
  app.require_subcommand(1);
  Invocation call{{&argc, &argv}};
  register_run(app, call);
  register_plan(app, call);
  register_estimate(app, call);
  register_profile(app, call);
  register_monitor(app, call);
  return parse_and_run(app, argc, argv, call);
}
