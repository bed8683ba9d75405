// Tests of --set overrides, of job_to_toml/job_to_json (round trip), of load_job on real files and of
// the job files shipped under configs/.
#define BOOST_TEST_MODULE job_set
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "job/job_testing.h"

namespace fs = std::filesystem;
using namespace job_testing;

BOOST_AUTO_TEST_SUITE(overrides)

BOOST_AUTO_TEST_CASE(valid_overrides) {
  const dp::Job j =
      dp::parse_job("[train]\nepochs = 1\n", "t.toml",
                    {"train.epochs=3", "model.hidden=[512,256]", "job.name=foo",
                     "launch.hosts=[\"a:2\",\"b:2\"]", "optim.lr=0.5", "checkpoint.enabled=false",
                     " log.every = 7 ", "data.path=/tmp/data dir", "job.output_dir=\"out/x\""});
  BOOST_TEST(j.train.epochs == 3);
  BOOST_TEST(j.model.hidden == (std::vector<int64_t>{512, 256}), boost::test_tools::per_element());
  BOOST_TEST(j.job.name == "foo");
  BOOST_TEST(j.launch.hosts == (std::vector<std::string>{"a:2", "b:2"}), boost::test_tools::per_element());
  BOOST_TEST(j.optim.lr == 0.5);
  BOOST_TEST(!j.checkpoint.enabled);
  BOOST_TEST(j.log.every == 7);
  BOOST_TEST(j.data.path == "/tmp/data dir");
  BOOST_TEST(j.job.output_dir == "out/x");
}

BOOST_AUTO_TEST_CASE(later_override_wins_and_strings_stay_strings) {
  const dp::Job j =
      dp::parse_job("", "t.toml", {"train.epochs=2", "train.epochs=5", "job.name=2024", "optim.lr=1"});
  BOOST_TEST(j.train.epochs == 5);
  BOOST_TEST(j.job.name == "2024");
  BOOST_TEST(j.optim.lr == 1.0);
}

BOOST_AUTO_TEST_CASE(override_replaces_a_bad_file_value) {
  const dp::Job j = dp::parse_job("[train]\nepochs = \"many\"\n", "t.toml", {"train.epochs=2"});
  BOOST_TEST(j.train.epochs == 2);
}

BOOST_AUTO_TEST_CASE(wrong_type) {
  const dp::JobError e = error_of("", {"train.epochs=abc"});
  BOOST_TEST(e.line() == "--set train.epochs=abc: error: train.epochs: expected an integer, got a string");
  expect_error("", {"train.epochs=2.5"}, "--set train.epochs=2.5", {"expected an integer, got a float"});
  expect_error("", {"model.hidden=[1,x]"}, "--set model.hidden=[1,x]",
               {"model.hidden: expected an array of integers, got a string"});
  expect_error("", {"launch.hosts=[a:2]"}, "--set launch.hosts=[a:2]",
               {"launch.hosts: expected an array of strings, got a string", "quote strings inside it"});
  expect_error("", {"model.hidden=[1,\"x\"]"}, "--set model.hidden=[1,\"x\"]",
               {"model.hidden[1]: expected an integer, got a string"});
}

BOOST_AUTO_TEST_CASE(unknown_key) {
  const dp::JobError e = error_of("", {"train.epoch=3"});
  BOOST_TEST(e.line() ==
             "--set train.epoch=3: error: unknown key 'train.epoch' (hint: did you mean 'train.epochs'?)");
  expect_error("", {"trian.epochs=3"}, "--set trian.epochs=3", {"did you mean 'train.epochs'?"});
  expect_error("", {"epochs=3"}, "--set epochs=3", {"unknown key 'epochs'", "did you mean 'train.epochs'?"});
  expect_error("", {"train.colour=3"}, "--set train.colour=3", {"valid keys of [train]"});
  expect_error("", {"network.speed=3"}, "--set network.speed=3", {"valid tables: [job]"});
  expect_error("", {"log=3"}, "--set log=3", {"unknown key 'log'", "name a key of [log]: log.every=VALUE"});
}

// Arrays of numbers: a float array literal, integers converted, errors naming the element or the override.
BOOST_AUTO_TEST_CASE(float_arrays) {
  const dp::Job j = dp::parse_job("[launch]\nranks = 2\n", "t.toml",
                                  {"cluster.emulate.slowdown=[1.0,2.5]", "parallel.balance.speeds=[ 1, 2.5 ]",
                                   "parallel.balance.mode=idat", "cluster.emulate.fluctuate_factor=2"});
  BOOST_TEST(j.cluster.emulate.slowdown == (std::vector<double>{1.0, 2.5}), boost::test_tools::per_element());
  BOOST_TEST(j.parallel.balance.speeds == (std::vector<double>{1.0, 2.5}), boost::test_tools::per_element());
  BOOST_TEST(j.parallel.balance.mode == dp::BalanceMode::idat);
  BOOST_TEST(j.cluster.emulate.fluctuate_factor == 2.0);
  // An empty array clears the file's.
  BOOST_TEST(dp::parse_job("[cluster.emulate]\nslowdown = [2]\n", "t.toml", {"cluster.emulate.slowdown=[]"})
                 .cluster.emulate.slowdown.empty());
  const std::string set = "cluster.emulate.slowdown=";
  const dp::JobError e = error_of("[launch]\nranks = 2\n", {set + "[1.0,0.5]"});
  BOOST_TEST(e.line() == "--set " + set + "[1.0,0.5]: error: cluster.emulate.slowdown[1]: must be at least 1, "
                         "got 0.5 (hint: a factor is the compute time relative to full speed: 1 is unslowed, 2 "
                         "twice as slow)");
  expect_error("", {set + "[1.0,x]"}, "--set " + set + "[1.0,x]",
               {"cluster.emulate.slowdown: expected an array of numbers, got a string",
                "separate the numbers by commas"});
  expect_error("", {set + "2"}, "--set " + set + "2",
               {"cluster.emulate.slowdown: expected an array of numbers, got an integer", "write an array"});
  expect_error("", {set + "[1,\"a\"]"}, "--set " + set + "[1,\"a\"]",
               {"cluster.emulate.slowdown[1]: expected a number, got a string"});
  expect_error("", {set + "[1,2]"}, "--set " + set + "[1,2]", {"must have launch.ranks (1) entries"});
  expect_error("", {"parallel.balance.mod=idat"}, "--set parallel.balance.mod=idat",
               {"did you mean 'parallel.balance.mode'?"});
  expect_error("", {"cluster.slowdown=[2]"}, "--set cluster.slowdown=[2]",
               {"unknown key 'cluster.slowdown'", "'slowdown' is a key of [cluster.emulate]"});
  expect_error("", {"cluster=1"}, "--set cluster=1", {"name a key of [cluster]: cluster.file=VALUE"});
}

BOOST_AUTO_TEST_CASE(missing_equals) {
  expect_error("", {"train.epochs"}, "--set train.epochs",
               {"expected KEY=VALUE, got 'train.epochs'", "write train.epochs=VALUE"});
  expect_error("", {"epochs 3"}, "--set epochs 3", {"expected KEY=VALUE"});
}

BOOST_AUTO_TEST_CASE(range_error_names_the_override_even_with_a_file_value) {
  expect_error("[launch]\nranks = 2\n", {"launch.ranks=0"}, "--set launch.ranks=0",
               {"--set launch.ranks=0: error: launch.ranks: must be at least 1, got 0"});
}

BOOST_AUTO_TEST_CASE(file_errors_come_first_for_structure) {
  expect_error("[trian]\n", {"train.epochs=2"}, "x.toml:1:1", {"unknown table '[trian]'"});
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(emit)

BOOST_AUTO_TEST_CASE(round_trip_defaults) {
  const dp::Job d;
  const dp::Job back = dp::parse_job(dp::job_to_toml(d), "emitted.toml");
  BOOST_TEST(same(back, d));
}

BOOST_AUTO_TEST_CASE(round_trip_full) {
  const dp::Job j =
      dp::parse_job(kFull, "full.toml", {"optim.lr=0.1", "optim.eps=3e-9", "job.seed=123456789012"});
  const std::string toml = dp::job_to_toml(j);
  BOOST_TEST_INFO(toml);
  const dp::Job back = dp::parse_job(toml, "emitted.toml");
  BOOST_TEST(same(back, j));
  BOOST_TEST(!same(back, dp::Job{}));
  BOOST_TEST(dp::job_to_toml(back) == toml);
}

// Arrays of numbers read back exactly, under their own nested headers.
BOOST_AUTO_TEST_CASE(round_trip_float_arrays) {
  dp::Job j;
  j.launch.ranks = 3;
  j.parallel.balance.speeds = {0.1, 1.0 / 3.0, 2e-7};
  j.cluster.emulate.slowdown = {1.0, 4.0 / 3.0, 1e6};
  const std::string t = dp::job_to_toml(j);
  BOOST_TEST_INFO(t);
  BOOST_TEST((t.find("\n[parallel.balance]\nevery = 1\n") != std::string::npos));  // keys sorted
  BOOST_TEST((t.find("\n[cluster.emulate]\n") != std::string::npos));
  BOOST_TEST((t.find("\nslowdown = [ 1.0, 1.3333333333333333, 1000000.0 ]\n") != std::string::npos));
  const dp::Job back = dp::parse_job(t, "emitted.toml");
  BOOST_TEST(back.parallel.balance.speeds == j.parallel.balance.speeds, boost::test_tools::per_element());
  BOOST_TEST(back.cluster.emulate.slowdown == j.cluster.emulate.slowdown, boost::test_tools::per_element());
  BOOST_TEST(same(back, j));
  const std::string s = dp::job_to_json(j);
  BOOST_TEST_INFO(s);
  const auto cluster = s.find("\"cluster\" : {");
  BOOST_REQUIRE(cluster != std::string::npos);
  BOOST_TEST((s.find("\"emulate\" : {", cluster) != std::string::npos));
  BOOST_TEST((s.find("\"slowdown\" : [", cluster) != std::string::npos));
  BOOST_TEST((s.find("\"balance\" : {") != std::string::npos));
  BOOST_TEST((s.find("\"speeds\" : [") != std::string::npos));
}

BOOST_AUTO_TEST_CASE(toml_has_every_key) {
  const std::string t = dp::job_to_toml(dp::Job{});
  for (const char* s :
       {"[job]", "[model]", "[data]", "[optim]", "[train]", "[parallel]", "[parallel.balance]", "[cluster.emulate]",
        "[launch]", "[checkpoint]", "[log]", "speeds = []", "slowdown = []", "fluctuate_rank = -1",
        "name = 'job'", "output_dir = ''", "hidden = [ 256, 128 ]", "global_batch = 128", "hosts = []",
        "mpirun_args = []", "enabled = true", "progress = 'auto'", "min_lr = 0.0"}) {
    BOOST_TEST_INFO(t << "\nwanted: " << s);
    BOOST_TEST((t.find(s) != std::string::npos));
  }
}

BOOST_AUTO_TEST_CASE(json_has_every_key) {
  dp::Job j;
  j.launch.hosts = {"n1:4"};
  const std::string s = dp::job_to_json(j);
  BOOST_TEST(s.front() == '{');
  for (const char* k :
       {"\"job\"", "\"name\" : \"job\"", "\"seed\" : 1", "\"hidden\"", "\"dataset\" : \"fashion-mnist\"",
        "\"lr\" : 0.001", "\"warmup_steps\" : 0", "\"global_batch\" : 128", "\"strategy\" : \"data\"",
        "\"ranks\" : 1", "\"n1:4\"", "\"enabled\" : true", "\"keep\" : 2", "\"progress\" : \"auto\""}) {
    BOOST_TEST_INFO(s << "\nwanted: " << k);
    BOOST_TEST((s.find(k) != std::string::npos));
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(files)

BOOST_AUTO_TEST_CASE(load_from_disk) {
  const fs::path dir = fs::temp_directory_path() / ("dptrain_job_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "j.toml";
  std::ofstream(file) << "[train]\nepochs = 4\nglobal_batch = \"x\"\n";
  try {
    dp::load_job(file.string());
    BOOST_FAIL("expected an error");
  } catch (const dp::JobError& e) {
    BOOST_TEST(e.where() == file.string() + ":3:16");
  }
  std::ofstream(file) << "[train]\nepochs = 4\n";
  const dp::Job j = dp::load_job(file.string(), {"train.steps=9"});
  BOOST_TEST(j.train.epochs == 4);
  BOOST_TEST(j.train.steps == 9);
  BOOST_TEST(j.source == file.string());
  try {
    dp::load_job(dir.string());
    BOOST_FAIL("expected an error");
  } catch (const dp::JobError& e) {
    BOOST_TEST(e.where() == dir.string());
    BOOST_TEST((e.message().find("directory") != std::string::npos));
  }
  fs::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(missing_file) {
  try {
    dp::load_job("/nonexistent/job.toml");
    BOOST_FAIL("expected an error");
  } catch (const dp::JobError& e) {
    BOOST_TEST(e.where() == "/nonexistent/job.toml");
    BOOST_TEST((e.line().find("/nonexistent/job.toml: error: cannot read the job file: No such file") == 0));
    BOOST_TEST(e.exit_code() == 2);
  }
}

// Every shipped job file must load.
BOOST_AUTO_TEST_CASE(shipped_configs_parse) {
  const fs::path configs = fs::path(DPTRAIN_SOURCE_DIR) / "configs";
  BOOST_REQUIRE(fs::is_directory(configs));
  int n = 0;
  for (const auto& entry : fs::recursive_directory_iterator(configs)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".toml") continue;
    BOOST_TEST_CONTEXT(entry.path().string()) {
      try {
        const dp::Job j = dp::load_job(entry.path().string());
        BOOST_TEST(j.source == entry.path().string());
        BOOST_TEST(same(dp::parse_job(dp::job_to_toml(j), "emitted.toml"), j));
      } catch (const dp::Error& e) {
        BOOST_ERROR(e.line());
      }
    }
    ++n;
  }
  BOOST_TEST_MESSAGE(n << " job files under configs/");
}

BOOST_AUTO_TEST_SUITE_END()
