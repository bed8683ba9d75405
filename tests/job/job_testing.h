// Helpers shared by the job tests: catching a JobError and checking its position and message, comparing
// Jobs field by field, and a job file that sets every key away from its default.
#pragma once

#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "lib/core/error.h"
#include "lib/job/job.h"

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

inline bool same(const dp::Job& a, const dp::Job& b) {
  return a.job.name == b.job.name && a.job.seed == b.job.seed && a.job.output_dir == b.job.output_dir &&
         a.model.type == b.model.type && a.model.hidden == b.model.hidden &&
         a.data.dataset == b.data.dataset && a.data.path == b.data.path &&
         a.data.train_samples == b.data.train_samples && a.data.test_samples == b.data.test_samples &&
         a.data.features == b.data.features && a.data.classes == b.data.classes &&
         a.optim.name == b.optim.name && a.optim.lr == b.optim.lr && a.optim.momentum == b.optim.momentum &&
         a.optim.weight_decay == b.optim.weight_decay && a.optim.beta1 == b.optim.beta1 &&
         a.optim.beta2 == b.optim.beta2 && a.optim.eps == b.optim.eps &&
         a.optim.schedule == b.optim.schedule && a.optim.warmup_steps == b.optim.warmup_steps &&
         a.optim.step_size == b.optim.step_size && a.optim.gamma == b.optim.gamma &&
         a.optim.min_lr == b.optim.min_lr && a.train.epochs == b.train.epochs &&
         a.train.steps == b.train.steps && a.train.global_batch == b.train.global_batch &&
         a.train.eval_every == b.train.eval_every && a.train.threads == b.train.threads &&
         a.train.device == b.train.device && a.parallel.strategy == b.parallel.strategy &&
         a.launch.ranks == b.launch.ranks && a.launch.hosts == b.launch.hosts &&
         a.launch.mpirun_args == b.launch.mpirun_args && a.launch.mpirun == b.launch.mpirun &&
         a.checkpoint.enabled == b.checkpoint.enabled && a.checkpoint.every == b.checkpoint.every &&
         a.checkpoint.keep == b.checkpoint.keep && a.log.every == b.log.every &&
         a.log.progress == b.log.progress;
}

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

[parallel]
strategy = "data"

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
