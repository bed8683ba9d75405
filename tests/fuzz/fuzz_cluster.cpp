// Fuzz target: a cluster file (a TOML file of [cluster] tables; `dptrain plan --cluster FILE` and
// [cluster] file) read into a job of 4 ranks, then built into a Cluster (cluster_from_job, draw_cluster).
// Bad files must be a JobError; a cluster that builds has positive, finite link bandwidths.
#include <cmath>
#include <cstdint>
#include <string>

#include "lib/cluster/cluster.h"
#include "lib/core/error.h"
#include "lib/job/job.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

constexpr const char* kJob = R"([job]
name = "fuzz"
[model]
type = "mlp"
hidden = [16]
[data]
dataset = "synthetic"
[train]
epochs = 1
global_batch = 64
[launch]
ranks = 4
)";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fuzz::TempFile file("cluster.toml");
  const std::string& path = file.write(data, size);
  dp::Job job;
  try {
    job = dp::parse_job(kJob, "/nonexistent/fuzz/job.toml", {}, path);
  } catch (const dp::InputError& e) {
    fuzz::rejected(e);
    return 0;
  }
  const dp::Cluster c = dp::cluster_from_job(job);
  FUZZ_CHECK(c.size() == job.launch.ranks, "a cluster of another size than launch.ranks");
  c.describe();
  for (const dp::ClusterRank& r : c.ranks())
    FUZZ_CHECK(r.speed > 0 && std::isfinite(r.speed) && r.memory_gb >= 0 && std::isfinite(r.memory_gb),
               "a rank without a positive, finite speed or with bad memory");
  for (int a = 0; a < c.size(); ++a)
    for (int b = 0; b < c.size(); ++b)
      if (a != b) {
        const dp::Link l = c.link(a, b);
        FUZZ_CHECK(l.gbps > 0 && std::isfinite(l.gbps) && l.latency_us >= 0 && std::isfinite(l.latency_us),
                   "a link without a positive, finite bandwidth or with a bad latency");
      }
  const dp::Cluster drawn = dp::draw_cluster(job, 13, 7);
  FUZZ_CHECK(drawn.size() == 13, "draw_cluster drew another number of ranks");
  return 0;
}
