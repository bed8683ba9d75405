// Fuzz target: "--set dotted.key=value" overrides (lib/job/job_overrides.cpp) on a valid job, one
// override per input line. Bad overrides must be a JobError naming the --set; a job they leave valid
// builds its cluster.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lib/cluster/cluster.h"
#include "lib/core/error.h"
#include "lib/job/job.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

constexpr const char* kBase = R"([job]
name = "fuzz"
seed = 1
[model]
type = "mlp"
hidden = [16]
[data]
dataset = "synthetic"
train_samples = 64
test_samples = 16
features = 8
classes = 2
[train]
epochs = 1
global_batch = 16
[launch]
ranks = 2
)";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> overrides;
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    overrides.emplace_back(rest.substr(0, nl));
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
  }
  try {
    const dp::Job job = dp::parse_job(kBase, "/nonexistent/fuzz/job.toml", overrides);
    // What plan and run do first with the job: its cluster, one entry per rank.
    FUZZ_CHECK(dp::cluster_from_job(job).size() == job.launch.ranks, "a cluster of another size than launch.ranks");
    dp::job_to_toml(job);
  } catch (const dp::InputError& e) {
    fuzz::rejected(e);
    // The error names where: the job file or the --set that caused it.
    FUZZ_CHECK(!e.where().empty(), "an error without a place: " + e.line());
  }
  return 0;
}
