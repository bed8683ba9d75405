// Helpers shared by the job tests: catching a JobError and checking its position and message, comparing
// Jobs field by field, and a job file that sets every key away from its default.
#pragma once

#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "lib/core/error.h"
#include "lib/job/job.h"
#include "lib/job/job_enums_io.h"  // BOOST_TEST prints compared enums by name

namespace job_testing {

// The JobError that parsing `text` (with `overrides`) throws; fails the test when none is thrown.
inline dp::JobError error_of(const std::string& text, const std::vector<std::string>& overrides = {},
                             const std::string& source = "x.toml") {
  try {
    dp::parse_job(text, source, overrides);
  } catch (const dp::JobError& e) {
    return e;
  }
  BOOST_FAIL("no JobError for: " + text);
  throw;  // unreachable
}

// Checks where() and that line() contains every fragment.
inline void expect_error(const std::string& text, const std::vector<std::string>& overrides,
                         const std::string& where, const std::vector<std::string>& fragments) {
  const dp::JobError e = error_of(text, overrides);
  BOOST_TEST_INFO("line: " << e.line());
  BOOST_TEST(e.where() == where);
  for (const auto& f : fragments) {
    BOOST_TEST_INFO("line: " << e.line() << "\nwanted: " << f);
    BOOST_TEST((e.line().find(f) != std::string::npos));
  }
  BOOST_TEST(e.exit_code() == 2);
}

// Every key of the schema: job_to_toml emits them all, so equal texts mean equal jobs.
inline bool same(const dp::Job& a, const dp::Job& b) { return dp::job_to_toml(a) == dp::job_to_toml(b); }

// A job with every key away from its default.
inline const char* const kFull = R"(# every key
[job]
name = "full-1.x_y"
seed = 42
output_dir = "out/full"

[model]
type = "mlp"
hidden = [512, 256, 64]

[data]
dataset = "synthetic"
path = "/data/fm"
train_samples = 1000
test_samples = 200
features = 16
classes = 3

[optim]
name = "sgd"
lr = 0.05
momentum = 0.5
weight_decay = 1e-4
beta1 = 0.8
beta2 = 0.99
eps = 1e-6
schedule = "cosine"
warmup_steps = 100
step_size = 50
gamma = 0.5
min_lr = 0.001

[train]
epochs = 3
steps = 500
global_batch = 64
eval_every = 25
threads = 2
device = "cpu"
micro_batch = 4
recompute = "all"

[parallel]
strategy = "cgp"

[parallel.comm]
algorithm = "ring"
bucket_mb = 4.5
first_bucket_mb = 0.25
overlap = false
sharded_update = false

[parallel.balance]
mode = "idat"
every = 5
threshold = 0.1
speeds = [1.0, 2.5, 1, 0.5]
max_share = 40

[parallel.cgp]
solver = "pls"
group_count = 2
groups = [0, 0, 1, 1]
max_staleness = 2
exchange_every = 3
regroup_every = 50
regroup_drift = 0.5
regroup_gain = 0.1
deterministic = true
solver_seconds = 0.5

[cluster]
memory_gb = [16, 16, 32, 32]
kinds = ["v100", "a100"]
kind_counts = [2, 2]
kind_speeds = [1, 2.2]
kind_memory_gb = [16, 40]
node_sizes = [1, 3]
nodes_per_rack = 1
sample_rate = 500

[cluster.links]
node_gbps = 200
node_latency_us = 0.5
rack_gbps = 25
rack_latency_us = 5
cross_gbps = 5
cross_latency_us = 40
gbps = [0, 1, 2, 3, 1, 0, 2, 3, 1, 2, 0, 3, 1, 2, 3, 0]
latency_us = [0, 5, 5, 5, 5, 0, 5, 5, 5, 5, 0, 5, 5, 5, 5, 0]

[cluster.emulate]
slowdown = [1.0, 2, 1.5, 3]
fluctuate_rank = 2
fluctuate_from = 10
fluctuate_to = 20
fluctuate_factor = 2.5
random_walk = 0.05
link_gbps = 10
link_latency_us = 25.0
as_described = true

[launch]
ranks = 4
hosts = ["a:2", "b:2"]
mpirun_args = ["--bind-to", "none"]
mpirun = "/usr/bin/mpirun"

[checkpoint]
enabled = false
every = 100
keep = 5

[log]
every = 5
progress = "plain"
)";

}  // namespace job_testing
