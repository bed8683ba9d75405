// The job file and --set options of the subcommands that read a job, wired once: `run`, `plan` and
// `estimate` take both with add_job_options; `profile` places them apart (its job is optional).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "apps/dptrain/commands.h"

namespace dp::app {

// The positional JOB.toml.
inline CLI::Option* add_job_path(CLI::App& cmd, std::string& path, const std::string& help) {
  return cmd.add_option("job", path, help)->type_name("JOB.toml");
}

// --set KEY=VALUE, repeatable.
inline CLI::Option* add_overrides(CLI::App& cmd, std::vector<std::string>& overrides) {
  return cmd.add_option("--set", overrides, "override a job key, validated like the file (repeatable)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
}

// A required JOB.toml, then --set.
inline void add_job_options(CLI::App& cmd, JobArgs& job) {
  add_job_path(cmd, job.path, "the TOML job file")->required();
  add_overrides(cmd, job.overrides);
}

}  // namespace dp::app
