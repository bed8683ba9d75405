// Tests of reading job files: defaults, every key, and every error class with its FILE:LINE:COL position,
// message and did-you-mean hint (keys, tables, enumerated values).
#define BOOST_TEST_MODULE job
#include <boost/test/unit_test.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "job/job_testing.h"

using namespace job_testing;

BOOST_AUTO_TEST_SUITE(parsing)

BOOST_AUTO_TEST_CASE(empty_file_gives_defaults) {
  const dp::Job j = dp::parse_job("", "empty.toml");
  BOOST_TEST(same(j, dp::Job{}));
  BOOST_TEST(j.source == "empty.toml");
  BOOST_TEST(j.job.name == "job");
  BOOST_TEST(j.output_dir() == "runs/job");
  BOOST_TEST(j.model.hidden == (std::vector<int64_t>{256, 128}), boost::test_tools::per_element());
  BOOST_TEST(j.optim.name == dp::OptimizerKind::adamw);
  BOOST_TEST(j.train.global_batch == 128);
  BOOST_TEST(j.launch.ranks == 1);
  BOOST_TEST(j.launch.mpirun == "mpirun");
  BOOST_TEST(j.checkpoint.enabled);
  BOOST_TEST(j.log.progress == dp::ProgressMode::automatic);
}

BOOST_AUTO_TEST_CASE(empty_tables_give_defaults) {
  const dp::Job j = dp::parse_job(
      "[job]\n[model]\n[data]\n[optim]\n[train]\n[parallel]\n[parallel.comm]\n[parallel.balance]\n"
      "[cluster]\n[cluster.emulate]\n[launch]\n"
      "[checkpoint]\n[log]\n",
      "t.toml");
  BOOST_TEST(same(j, dp::Job{}));
}

BOOST_AUTO_TEST_CASE(every_key_is_read) {
  const dp::Job j = dp::parse_job(kFull, "full.toml");
  BOOST_TEST(j.job.name == "full-1.x_y");
  BOOST_TEST(j.job.seed == 42u);
  BOOST_TEST(j.output_dir() == "out/full");
  BOOST_TEST(j.model.hidden == (std::vector<int64_t>{512, 256, 64}), boost::test_tools::per_element());
  BOOST_TEST(j.data.dataset == dp::DatasetKind::synthetic);
  BOOST_TEST(j.data.path == "/data/fm");
  BOOST_TEST(j.data.train_samples == 1000);
  BOOST_TEST(j.data.test_samples == 200);
  BOOST_TEST(j.data.features == 16);
  BOOST_TEST(j.data.classes == 3);
  BOOST_TEST(j.optim.name == dp::OptimizerKind::sgd);
  BOOST_TEST(j.optim.lr == 0.05);
  BOOST_TEST(j.optim.momentum == 0.5);
  BOOST_TEST(j.optim.weight_decay == 1e-4);
  BOOST_TEST(j.optim.beta1 == 0.8);
  BOOST_TEST(j.optim.beta2 == 0.99);
  BOOST_TEST(j.optim.eps == 1e-6);
  BOOST_TEST(j.optim.schedule == dp::LrSchedule::cosine);
  BOOST_TEST(j.optim.warmup_steps == 100);
  BOOST_TEST(j.optim.step_size == 50);
  BOOST_TEST(j.optim.gamma == 0.5);
  BOOST_TEST(j.optim.min_lr == 0.001);
  BOOST_TEST(j.train.epochs == 3);
  BOOST_TEST(j.train.steps == 500);
  BOOST_TEST(j.train.global_batch == 64);
  BOOST_TEST(j.train.eval_every == 25);
  BOOST_TEST(j.train.threads == 2);
  BOOST_TEST(j.parallel.comm.algorithm == dp::CommAlgorithm::ring);
  BOOST_TEST(j.parallel.comm.bucket_mb == 4.5);
  BOOST_TEST(j.parallel.comm.first_bucket_mb == 0.25);
  BOOST_TEST(!j.parallel.comm.overlap);
  BOOST_TEST(!j.parallel.comm.sharded_update);
  BOOST_TEST(j.launch.ranks == 4);
  BOOST_TEST(j.launch.hosts == (std::vector<std::string>{"a:2", "b:2"}), boost::test_tools::per_element());
  BOOST_TEST(j.launch.mpirun_args == (std::vector<std::string>{"--bind-to", "none"}),
             boost::test_tools::per_element());
  BOOST_TEST(j.launch.mpirun == "/usr/bin/mpirun");
  BOOST_TEST(!j.checkpoint.enabled);
  BOOST_TEST(j.checkpoint.every == 100);
  BOOST_TEST(j.checkpoint.keep == 5);
  BOOST_TEST(j.log.every == 5);
  BOOST_TEST(j.log.progress == dp::ProgressMode::plain);
}

BOOST_AUTO_TEST_CASE(integer_accepted_for_float_key) {
  const dp::Job j = dp::parse_job("[optim]\nlr = 1\nmomentum = 0\n", "t.toml");
  BOOST_TEST(j.optim.lr == 1.0);
  BOOST_TEST(j.optim.momentum == 0.0);
}

BOOST_AUTO_TEST_CASE(dotted_keys_and_inline_tables) {
  const dp::Job j = dp::parse_job("train.epochs = 4\nlog = { every = 3 }\n", "t.toml");
  BOOST_TEST(j.train.epochs == 4);
  BOOST_TEST(j.log.every == 3);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(errors)

BOOST_AUTO_TEST_CASE(syntax_error) {
  expect_error("[train]\nepochs = \n", {}, "x.toml:2:10",
               {"x.toml:2:10: error: ", "the file is not valid TOML"});
  expect_error("[train\nepochs = 1\n", {}, "x.toml:1:7", {"(hint: the file is not valid TOML)"});
  expect_error("[train]\nepochs = 1\nepochs = 2\n", {}, "x.toml:3:10", {"redefine", "epochs"});
}

BOOST_AUTO_TEST_CASE(wrong_type_integer) {
  const std::string text = "# x\n\n[job]\nname = \"a\"\n\n[train]\nglobal_batch = \"x\"\n";
  const dp::JobError e = error_of(text, {}, "configs/x.toml");
  BOOST_TEST(e.line() == "configs/x.toml:7:16: error: train.global_batch: expected an integer, got a string");
  expect_error("[train]\nepochs = 3.0\n", {}, "x.toml:2:10",
               {"train.epochs: expected an integer, got a float", "whole number"});
  expect_error("[job]\nseed = true\n", {}, "x.toml:2:8", {"job.seed: expected an integer, got a boolean"});
}

BOOST_AUTO_TEST_CASE(wrong_type_others) {
  expect_error("[optim]\nlr = \"0.1\"\n", {}, "x.toml:2:6", {"optim.lr: expected a number, got a string"});
  expect_error("[job]\nname = 5\n", {}, "x.toml:2:8",
               {"job.name: expected a string, got an integer", "quoted"});
  expect_error("[checkpoint]\nenabled = \"yes\"\n", {}, "x.toml:2:11",
               {"checkpoint.enabled: expected a boolean, got a string", "true or false"});
  expect_error("[data]\npath = 1979-05-27\n", {}, "x.toml:2:8", {"data.path: expected a string, got a date"});
}

BOOST_AUTO_TEST_CASE(wrong_type_arrays) {
  expect_error("[model]\nhidden = 256\n", {}, "x.toml:2:10",
               {"model.hidden: expected an array of integers, got an integer", "write an array"});
  expect_error("[model]\nhidden = [256,\n  \"x\"]\n", {}, "x.toml:3:3",
               {"model.hidden[1]: expected an integer, got a string"});
  expect_error("[launch]\nhosts = [\"a:2\", 3]\n", {}, "x.toml:2:17",
               {"launch.hosts[1]: expected a string, got an integer"});
  expect_error("[launch]\nmpirun_args = \"--bind-to none\"\n", {}, "x.toml:2:15",
               {"launch.mpirun_args: expected an array of strings, got a string"});
}

BOOST_AUTO_TEST_CASE(table_of_wrong_kind) {
  expect_error("train = 3\n", {}, "x.toml:1:9",
               {"train: expected a table, got an integer", "[train] header"});
  expect_error("[[train]]\nepochs = 1\n", {}, "x.toml:1:1",
               {"train: expected a table, got an array", "write [train], not [[train]]"});
}

BOOST_AUTO_TEST_CASE(unknown_key_did_you_mean) {
  const dp::JobError e = error_of("[train]\nepochs = 1\nglobal_bach = 2\n", {}, "configs/x.toml");
  BOOST_TEST(
      e.line() ==
      "configs/x.toml:3:1: error: unknown key 'train.global_bach' (hint: did you mean 'global_batch'?)");
  expect_error("[optim]\n  scedule = \"step\"\n", {}, "x.toml:2:3", {"did you mean 'schedule'?"});
}

BOOST_AUTO_TEST_CASE(unknown_key_without_close_match) {
  expect_error("[train]\nfoo = 1\n", {}, "x.toml:2:1",
               {"unknown key 'train.foo'", "valid keys of [train]: epochs, steps, global_batch"});
  expect_error("[train]\nlr = 0.1\n", {}, "x.toml:2:1",
               {"unknown key 'train.lr'", "'lr' is a key of [optim]"});
  expect_error("[train.extra]\nx = 1\n", {}, "x.toml:1:8", {"unknown key 'train.extra'"});
}

BOOST_AUTO_TEST_CASE(unknown_table) {
  const dp::JobError e = error_of("[job]\n\n[trian]\nepochs = 2\n");
  BOOST_TEST(e.line() == "x.toml:3:1: error: unknown table '[trian]' (hint: did you mean '[train]'?)");
  expect_error("[network]\n", {}, "x.toml:1:1",
               {"unknown table '[network]'",
                "valid tables: [job], [model], [data], [optim], [train], [parallel], [cluster], "
                "[launch], [checkpoint], [log]"});
}

BOOST_AUTO_TEST_CASE(key_outside_tables) {
  expect_error("epochs = 2\n[train]\n", {}, "x.toml:1:1",
               {"unknown key 'epochs' outside any table", "'epochs' is a key of [train]"});
  expect_error("colour = 2\n", {}, "x.toml:1:1",
               {"unknown key 'colour' outside any table", "[job], [model]", "[log]"});
}

BOOST_AUTO_TEST_CASE(ranks_must_be_positive) {
  const dp::JobError e = error_of("[launch]\nranks = 0\n", {}, "configs/r.toml");
  BOOST_TEST(e.line() == "configs/r.toml:2:9: error: launch.ranks: must be at least 1, got 0");
}

// Every range rule, through --set so the position is the override itself.
BOOST_AUTO_TEST_CASE(ranges) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"launch.ranks=0", "launch.ranks: must be at least 1, got 0"},
      {"train.global_batch=0", "train.global_batch: must be at least 1, got 0"},
      {"train.epochs=0", "train.epochs: must be at least 1, got 0"},
      {"train.steps=-1", "train.steps: must be at least 0, got -1"},
      {"train.eval_every=-5", "train.eval_every: must be at least 0, got -5"},
      {"train.threads=-1", "train.threads: must be at least 0, got -1"},
      {"model.hidden=[]", "model.hidden: must not be empty"},
      {"model.hidden=[16,0]", "model.hidden[1]: must be at least 1, got 0"},
      {"optim.lr=0", "optim.lr: must be greater than 0, got 0"},
      {"optim.lr=-0.1", "optim.lr: must be greater than 0, got -0.1"},
      {"optim.lr=inf", "optim.lr: must be a finite number, got inf"},
      {"optim.momentum=1", "optim.momentum: must be in [0, 1), got 1"},
      {"optim.momentum=-0.1", "optim.momentum: must be in [0, 1), got -0.1"},
      {"optim.weight_decay=-1e-4", "optim.weight_decay: must be at least 0, got -0.0001"},
      {"optim.beta1=1.0", "optim.beta1: must be in [0, 1), got 1"},
      {"optim.beta2=1.5", "optim.beta2: must be in [0, 1), got 1.5"},
      {"optim.eps=0", "optim.eps: must be greater than 0, got 0"},
      {"optim.warmup_steps=-1", "optim.warmup_steps: must be at least 0, got -1"},
      {"optim.step_size=0", "optim.step_size: must be at least 1, got 0"},
      {"optim.gamma=0", "optim.gamma: must be in (0, 1], got 0"},
      {"optim.gamma=1.01", "optim.gamma: must be in (0, 1], got 1.01"},
      {"optim.min_lr=-1", "optim.min_lr: must be at least 0, got -1"},
      {"optim.min_lr=0.01", "optim.min_lr: must not exceed optim.lr (0.001), got 0.01"},
      {"data.train_samples=0", "data.train_samples: must be at least 1, got 0"},
      {"data.test_samples=0", "data.test_samples: must be at least 1, got 0"},
      {"data.features=0", "data.features: must be at least 1, got 0"},
      {"data.classes=1", "data.classes: must be at least 2, got 1"},
      {"checkpoint.every=-1", "checkpoint.every: must be at least 0, got -1"},
      {"checkpoint.keep=0", "checkpoint.keep: must be at least 1, got 0"},
      {"log.every=0", "log.every: must be at least 1, got 0"},
      {"job.seed=-1", "job.seed: must be at least 0, got -1"},
      {"job.name=", "job.name: must not be empty"},
      {"job.name=a b", "job.name: may contain only letters, digits, '.', '_' and '-', got 'a b'"},
      {"job.name=x/y", "job.name: may contain only"},
      {"job.name=..", "job.name: must not be '..'"},
      {"launch.mpirun=\"\"", "launch.mpirun: must not be empty"},
      {"launch.hosts=[\"a:1\", \"\"]", "launch.hosts[1]: must not be empty"},
      {"parallel.comm.bucket_mb=0", "parallel.comm.bucket_mb: must be greater than 0, got 0"},
      {"parallel.comm.bucket_mb=-1", "parallel.comm.bucket_mb: must be greater than 0, got -1"},
      {"parallel.comm.first_bucket_mb=0", "parallel.comm.first_bucket_mb: must be greater than 0, got 0"},
      {"parallel.comm.first_bucket_mb=26",
       "parallel.comm.first_bucket_mb: must not exceed parallel.comm.bucket_mb (25), got 26"},
  };
  for (const auto& [set, message] : cases) {
    BOOST_TEST_CONTEXT("--set " << set) {
      expect_error("", {set}, "--set " + set, {"--set " + set + ": error: " + message});
    }
  }
  // Boundary values that are fine.
  const dp::Job j = dp::parse_job("", "t.toml",
                                  {"train.steps=0", "optim.momentum=0", "optim.gamma=1", "optim.min_lr=0.001",
                                   "data.classes=2", "job.seed=0", "checkpoint.every=0"});
  BOOST_TEST(j.optim.gamma == 1.0);
}

BOOST_AUTO_TEST_CASE(range_errors_point_at_the_value) {
  expect_error("[optim]\nlr = 0.1\nmin_lr = 0.5\n", {}, "x.toml:3:10",
               {"optim.min_lr: must not exceed optim.lr (0.1), got 0.5"});
  expect_error("[model]\nhidden = [8, -3]\n", {}, "x.toml:2:14",
               {"model.hidden[1]: must be at least 1, got -3"});
  expect_error("[job]\nname = \"my job\"\n", {}, "x.toml:2:8", {"job.name: may contain only", "runs/<name>"});
}

BOOST_AUTO_TEST_CASE(enumerations) {
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"[model]\ntype = \"mpl\"\n", "model.type: unknown value 'mpl'",
       "did you mean 'mlp'? valid values: mlp, cnn, gpt"},
      {"[data]\ndataset = \"fashion_mnist\"\n", "data.dataset: unknown value 'fashion_mnist'",
       "did you mean 'fashion-mnist'? valid values: fashion-mnist, synthetic, text"},
      {"[optim]\nname = \"adam\"\n", "optim.name: unknown value 'adam'",
       "did you mean 'adamw'? valid values: sgd, adamw"},
      {"[optim]\nschedule = \"cosin\"\n", "optim.schedule: unknown value 'cosin'",
       "did you mean 'cosine'? valid values: constant, step, cosine"},
      {"[train]\ndevice = \"cpus\"\n", "train.device: unknown value 'cpus'",
       "did you mean 'cpu'? valid values: auto, cpu, cuda"},
      {"[parallel]\nstrategy = \"date\"\n", "parallel.strategy: unknown value 'date'",
       "did you mean 'data'? valid values: data, cgp, pipeline, cgp-pipeline, auto"},
      {"[parallel.comm]\nalgorithm = \"rign\"\n", "parallel.comm.algorithm: unknown value 'rign'",
       "did you mean 'ring'? valid values: native, ring, mra"},
      {"[log]\nprogress = \"bars\"\n", "log.progress: unknown value 'bars'",
       "did you mean 'bar'? valid values: auto, bar, plain, none"},
  };
  for (const auto& [text, message, hint] : cases) {
    BOOST_TEST_CONTEXT(text) {
      expect_error(text, {}, "x.toml:2:" + std::to_string(text.find('"') - text.find('\n')),
                   {message, "(hint: " + hint + ")"});
    }
  }
  // No close value: no suggestion, but the list.
  const dp::JobError e = error_of("[optim]\nname = \"lbfgs\"\n");
  BOOST_TEST(e.hint() == "valid values: sgd, adamw");
}

BOOST_AUTO_TEST_SUITE_END()
