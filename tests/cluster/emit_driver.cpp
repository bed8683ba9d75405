// Test driver for the scheduler emitters (lib/launch/emit.h): loads a job file, fills a
// SchedulerRequest from the command line (the sizing `dptrain estimate` will compute), and prints
// sbatch_script() or mpijob_manifest(), or (toml) the resolved job text the request carries. Used by
// tests/cluster/slurm.sh and mpijob_schema.sh.
// Usage: cluster_emit_driver slurm|k8s|toml JOB.toml [--ranks N] [--nodes N] [--ranks-per-node N] [--cpus N]
//        [--memory-mib N] [--gpus N] [--time-s S] [--image I] [--dptrain PATH] [--set K=V]...
//        [-- RUN_ARGS...]
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "lib/core/error.h"
#include "lib/job/job.h"
#include "lib/launch/emit.h"

namespace {

int64_t whole(const char* flag, const char* v) {
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  if (!*v || *end) throw dp::UsageError(flag, std::string("expected a whole number, got '") + v + "'");
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc < 3) throw dp::UsageError("cluster_emit_driver", "usage: cluster_emit_driver slurm|k8s JOB.toml [...]");
    const std::string_view emit = argv[1];
    if (emit != "slurm" && emit != "k8s" && emit != "toml")
      throw dp::UsageError("cluster_emit_driver", "emit slurm, k8s or toml");
    dp::SchedulerRequest r;
    r.job_file = argv[2];
    std::vector<std::string> overrides;
    int64_t ranks = 0, nodes = 1, per_node = 0;
    int i = 3;
    for (; i < argc; ++i) {
      const std::string_view a = argv[i];
      if (a == "--") {
        ++i;
        break;
      }
      if (i + 1 >= argc) throw dp::UsageError(argv[i], "needs a value");
      const char* v = argv[++i];
      if (a == "--ranks") ranks = whole(argv[i - 1], v);
      else if (a == "--nodes") nodes = whole(argv[i - 1], v);
      else if (a == "--ranks-per-node") per_node = whole(argv[i - 1], v);
      else if (a == "--cpus") r.cpus_per_rank = whole(argv[i - 1], v);
      else if (a == "--memory-mib") r.memory_per_rank_bytes = whole(argv[i - 1], v) << 20;
      else if (a == "--gpus") r.gpus_per_rank = whole(argv[i - 1], v);
      else if (a == "--time-s") r.time_limit_s = std::strtod(v, nullptr);
      else if (a == "--image") r.image = v;
      else if (a == "--dptrain") r.dptrain = v;
      else if (a == "--set") overrides.emplace_back(v);
      else throw dp::UsageError(argv[i - 1], "unknown option");
    }
    for (; i < argc; ++i) r.run_args.emplace_back(argv[i]);
    const dp::Job job = dp::load_job(r.job_file, overrides);
    r.job_name = job.job.name;
    r.job_text = dp::job_to_toml(job);
    r.ranks = ranks > 0 ? ranks : job.launch.ranks;
    r.nodes = nodes;
    r.ranks_per_node = per_node > 0 ? per_node : (r.ranks + nodes - 1) / nodes;
    const std::string text = emit == "slurm" ? dp::sbatch_script(r)
                             : emit == "k8s"  ? dp::mpijob_manifest(r)
                                              : r.job_text;
    std::fputs(text.c_str(), stdout);
    return 0;
  } catch (const dp::Error& e) {
    std::fprintf(stderr, "cluster_emit_driver: %s\n", e.line().c_str());
    return e.exit_code();
  }
}
