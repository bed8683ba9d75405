// Fuzz target: a job file's text (parse_job, lib/job). Bad input must be a JobError. A job that parses
// builds its cluster (what plan and run do first: one entry per rank, so a job may not claim more ranks
// than memory holds) and reads back unchanged from its own emitted TOML (job_to_toml: the run folder's
// job.toml).
#include <cstdint>
#include <string>
#include <string_view>

#include "lib/cluster/cluster.h"
#include "lib/core/error.h"
#include "lib/job/job.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string source = "/nonexistent/fuzz/job.toml";  // a cluster.file next to it never exists
  dp::Job job;
  try {
    job = dp::parse_job(text, source);
  } catch (const dp::InputError& e) {
    fuzz::rejected(e);
    return 0;
  }
  FUZZ_CHECK(dp::cluster_from_job(job).size() == job.launch.ranks, "a cluster of another size than launch.ranks");
  const std::string emitted = dp::job_to_toml(job);
  dp::Job again;
  try {
    again = dp::parse_job(emitted, source);
  } catch (const dp::InputError& e) {
    FUZZ_CHECK(false, "the emitted job does not parse: " + e.line() + "\n" + emitted);
  }
  FUZZ_CHECK(dp::job_to_toml(again) == emitted, "the emitted job parses to another job:\n" + emitted);
  return 0;
}
