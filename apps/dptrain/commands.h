// dptrain's subcommands. Each cmd_<name>.cpp registers its own options with CLI11 (CLI11's
// subcommand-per-file pattern) and carries the command out by calling libdptrain; main.cpp creates the
// app, registers every subcommand, parses, and turns errors into exit statuses.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace dp::app {

// Process arguments, for subcommands that start MPI or relaunch themselves.
struct ProcessArgs {
  int* argc;
  char*** argv;
};

// What a subcommand gets from main(), and where the one that ran leaves its exit status.
struct Invocation {
  ProcessArgs process;
  int status = 0;
};

// A job file and its --set overrides (job_options.h adds them to a subcommand).
struct JobArgs {
  std::string path;
  std::vector<std::string> overrides;  // --set dotted.key=value
};

// In the order `dptrain --help` lists them.
void register_run(CLI::App& app, Invocation& call);
void register_plan(CLI::App& app, Invocation& call);
void register_estimate(CLI::App& app, Invocation& call);
void register_profile(CLI::App& app, Invocation& call);
void register_monitor(CLI::App& app, Invocation& call);

}  // namespace dp::app
