// Tests of [parallel.balance] (I-DAT batch division) and [cluster.emulate] (emulated heterogeneity): the
// tables in the schema, reading every key (arrays of numbers, integers accepted), their type and range
// errors with FILE:LINE:COL naming the bad element, and the cross-key checks against launch.ranks and
// train.global_batch. Overrides and emission of these keys are tested in test_job_set.cpp.
#define BOOST_TEST_MODULE job_balance
#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "job/job_testing.h"
#include "lib/job/schema.h"

using namespace job_testing;
namespace jd = dp::job_detail;
using Doubles = std::vector<double>;

BOOST_AUTO_TEST_SUITE(schema)

BOOST_AUTO_TEST_CASE(tables) {
  BOOST_TEST(jd::is_table("parallel.balance"));
  BOOST_TEST(jd::is_table("cluster"));
  BOOST_TEST(jd::is_table("cluster.emulate"));
  BOOST_TEST(jd::sub_tables("cluster") == (std::vector<std::string>{"cluster.links", "cluster.emulate"}),
             boost::test_tools::per_element());
  BOOST_TEST(jd::key_names("parallel.balance") ==
                 (std::vector<std::string>{"mode", "every", "threshold", "speeds", "max_share"}),
             boost::test_tools::per_element());
  BOOST_TEST(jd::key_names("cluster.emulate") ==
                 (std::vector<std::string>{"slowdown", "fluctuate_rank", "fluctuate_from", "fluctuate_to",
                                           "fluctuate_factor", "fluctuate_move_every", "random_walk", "link_gbps",
                                           "link_latency_us", "memory_gb", "as_described"}),
             boost::test_tools::per_element());
  BOOST_TEST(jd::first_key_below("cluster") == "cluster.file");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(reading)

BOOST_AUTO_TEST_CASE(defaults) {
  const dp::Job j = dp::parse_job("[cluster]\n", "t.toml");
  BOOST_TEST(same(j, dp::Job{}));
  const dp::BalanceSection& b = j.parallel.balance;
  BOOST_TEST(b.mode == dp::BalanceMode::equal);
  BOOST_TEST(b.every == 1);
  BOOST_TEST(b.threshold == 0.03);
  BOOST_TEST(b.speeds.empty());
  BOOST_TEST(b.max_share == 0);
  const dp::EmulateSection& e = j.cluster.emulate;
  BOOST_TEST(e.slowdown.empty());
  BOOST_TEST(e.fluctuate_rank == -1);
  BOOST_TEST(e.fluctuate_from == 0);
  BOOST_TEST(e.fluctuate_to == 0);
  BOOST_TEST(e.fluctuate_factor == 1.0);
  BOOST_TEST(e.random_walk == 0.0);
  BOOST_TEST(e.link_gbps == 0.0);
  BOOST_TEST(e.link_latency_us == 0.0);
}

BOOST_AUTO_TEST_CASE(every_key_of_the_full_job) {
  const dp::Job j = dp::parse_job(kFull, "full.toml");
  const dp::BalanceSection& b = j.parallel.balance;
  BOOST_TEST(b.mode == dp::BalanceMode::idat);
  BOOST_TEST(b.every == 5);
  BOOST_TEST(b.threshold == 0.1);
  BOOST_TEST(b.speeds == (Doubles{1.0, 2.5, 1.0, 0.5}), boost::test_tools::per_element());
  BOOST_TEST(b.max_share == 40);
  const dp::EmulateSection& e = j.cluster.emulate;
  BOOST_TEST(e.slowdown == (Doubles{1.0, 2.0, 1.5, 3.0}), boost::test_tools::per_element());
  BOOST_TEST(e.fluctuate_rank == 2);
  BOOST_TEST(e.fluctuate_from == 10);
  BOOST_TEST(e.fluctuate_to == 20);
  BOOST_TEST(e.fluctuate_factor == 2.5);
  BOOST_TEST(e.random_walk == 0.05);
  BOOST_TEST(e.link_gbps == 10.0);
  BOOST_TEST(e.link_latency_us == 25.0);
}

BOOST_AUTO_TEST_CASE(integers_in_arrays_of_numbers) {
  const dp::Job j = dp::parse_job(
      "[launch]\nranks = 3\n[parallel.balance]\nspeeds = [1, 2, 3]\n[cluster.emulate]\nslowdown = [1, 2.5, 4]\n",
      "t.toml");
  BOOST_TEST(j.parallel.balance.speeds == (Doubles{1.0, 2.0, 3.0}), boost::test_tools::per_element());
  BOOST_TEST(j.cluster.emulate.slowdown == (Doubles{1.0, 2.5, 4.0}), boost::test_tools::per_element());
  // An inline table, dotted keys, an empty array, integers for number keys.
  const dp::Job k = dp::parse_job(
      "cluster = { emulate = { slowdown = [2], fluctuate_factor = 3 } }\n"
      "parallel.balance.speeds = []\nparallel.balance.threshold = 0\n",
      "t.toml");
  BOOST_TEST(k.cluster.emulate.slowdown == (Doubles{2.0}), boost::test_tools::per_element());
  BOOST_TEST(k.cluster.emulate.fluctuate_factor == 3.0);
  BOOST_TEST(k.parallel.balance.speeds.empty());
  BOOST_TEST(k.parallel.balance.threshold == 0.0);
}

BOOST_AUTO_TEST_CASE(limits_that_are_allowed) {
  // A fluctuating rank with factor 1 (no slowdown), an empty window, the last rank; max_share exactly
  // enough (ceil(130 / 4) = 33).
  const dp::Job j = dp::parse_job(
      "[train]\nglobal_batch = 130\n[launch]\nranks = 4\n[parallel.balance]\nmax_share = 33\n"
      "[cluster.emulate]\nfluctuate_rank = 3\nfluctuate_from = 5\nfluctuate_to = 5\nfluctuate_factor = 1\n",
      "t.toml");
  BOOST_TEST(j.parallel.balance.max_share == 33);
  BOOST_TEST(j.cluster.emulate.fluctuate_rank == 3);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(errors)

BOOST_AUTO_TEST_CASE(unknown_keys_and_tables) {
  expect_error("[parallel.balance]\nmod = \"idat\"\n", {}, "x.toml:2:1",
               {"unknown key 'parallel.balance.mod'", "did you mean 'mode'?"});
  expect_error("[cluster]\nslowdown = [2]\n", {}, "x.toml:2:1",
               {"unknown key 'cluster.slowdown'", "'slowdown' is a key of [cluster.emulate]"});
  expect_error("[cluster]\nemulat = 1\n", {}, "x.toml:2:1",
               {"unknown key 'cluster.emulat'", "did you mean the table '[cluster.emulate]'?"});
  expect_error("[cluster]\nspeed = 1\n", {}, "x.toml:2:1",
               {"unknown key 'cluster.speed'", "did you mean 'speeds'?"});
  expect_error("[cluster.emulat]\n", {}, "x.toml:1:1",
               {"unknown table '[cluster.emulat]'", "did you mean '[cluster.emulate]'?"});
  expect_error("[emulate]\n", {}, "x.toml:1:1", {"unknown table '[emulate]'", "did you mean '[cluster.emulate]'?"});
  expect_error("[parallel.balanse]\n", {}, "x.toml:1:1", {"did you mean '[parallel.balance]'?"});
  expect_error("cluster = 1\n", {}, "x.toml:1:11", {"cluster: expected a table, got an integer"});
}

BOOST_AUTO_TEST_CASE(wrong_types) {
  const dp::JobError e = error_of("[parallel.balance]\nspeeds = [1.0,\n  \"fast\"]\n");
  BOOST_TEST(e.line() == "x.toml:3:3: error: parallel.balance.speeds[1]: expected a number, got a string");
  expect_error("[parallel.balance]\nspeeds = 1.5\n", {}, "x.toml:2:10",
               {"parallel.balance.speeds: expected an array of numbers, got a float", "write an array"});
  expect_error("[cluster.emulate]\nslowdown = [1, 2, true]\n", {}, "x.toml:2:19",
               {"cluster.emulate.slowdown[2]: expected a number, got a boolean"});
  expect_error("[cluster.emulate]\nslowdown = [[2]]\n", {}, "x.toml:2:13",
               {"cluster.emulate.slowdown[0]: expected a number, got an array"});
  expect_error("[parallel.balance]\nmode = 1\n", {}, "x.toml:2:8",
               {"parallel.balance.mode: expected a string, got an integer"});
  expect_error("[parallel.balance]\nmax_share = 1.5\n", {}, "x.toml:2:13",
               {"parallel.balance.max_share: expected an integer, got a float", "whole number"});
  expect_error("[cluster.emulate]\nrandom_walk = \"0.1\"\n", {}, "x.toml:2:15",
               {"cluster.emulate.random_walk: expected a number, got a string"});
}

BOOST_AUTO_TEST_CASE(mode_is_an_enumeration) {
  const dp::JobError e = error_of("[parallel.balance]\nmode = \"idt\"\n");
  BOOST_TEST(e.line() ==
             "x.toml:2:8: error: parallel.balance.mode: unknown value 'idt' "
             "(hint: did you mean 'idat'? valid values: equal, idat)");
}

BOOST_AUTO_TEST_CASE(ranges) {
  const std::string b = "[parallel.balance]\n", c = "[cluster.emulate]\n";
  expect_error(b + "every = 0\n", {}, "x.toml:2:9", {"parallel.balance.every: must be at least 1, got 0"});
  expect_error(b + "threshold = 1\n", {}, "x.toml:2:13", {"parallel.balance.threshold: must be in [0, 1), got 1"});
  expect_error(b + "threshold = -0.1\n", {}, "x.toml:2:13", {"must be in [0, 1), got -0.1"});
  expect_error(b + "threshold = nan\n", {}, "x.toml:2:13", {"must be in [0, 1), got nan"});
  expect_error(b + "max_share = -1\n", {}, "x.toml:2:13", {"parallel.balance.max_share: must be at least 0, got -1"});
  expect_error(c + "fluctuate_rank = -2\n", {}, "x.toml:2:18",
               {"cluster.emulate.fluctuate_rank: must be at least -1, got -2", "-1 turns the fluctuation off"});
  expect_error(c + "fluctuate_from = -1\n", {}, "x.toml:2:18",
               {"cluster.emulate.fluctuate_from: must be at least 0, got -1"});
  expect_error(c + "fluctuate_to = -1\n", {}, "x.toml:2:16",
               {"cluster.emulate.fluctuate_to: must be at least 0, got -1"});
  expect_error(c + "fluctuate_factor = 0.5\n", {}, "x.toml:2:20",
               {"cluster.emulate.fluctuate_factor: must be at least 1, got 0.5"});
  expect_error(c + "fluctuate_factor = inf\n", {}, "x.toml:2:20", {"must be a finite number, got inf"});
  expect_error(c + "random_walk = -0.1\n", {}, "x.toml:2:15",
               {"cluster.emulate.random_walk: must be at least 0, got -0.1"});
  expect_error(c + "link_gbps = -10\n", {}, "x.toml:2:13", {"cluster.emulate.link_gbps: must be at least 0, got -10"});
  expect_error(c + "link_latency_us = nan\n", {}, "x.toml:2:19", {"must be a finite number, got nan"});
}

// A bad element is reported at its own position, by index.
BOOST_AUTO_TEST_CASE(element_ranges) {
  const std::string four = "[launch]\nranks = 4\n";
  const dp::JobError e = error_of(four + "[parallel.balance]\nspeeds = [1, 2, 0, 1]\n");
  BOOST_TEST(e.line() == "x.toml:4:17: error: parallel.balance.speeds[2]: must be greater than 0, got 0");
  expect_error(four + "[parallel.balance]\nspeeds = [1, -2.5, 1, 1]\n", {}, "x.toml:4:14",
               {"parallel.balance.speeds[1]: must be greater than 0, got -2.5"});
  expect_error(four + "[parallel.balance]\nspeeds = [1, 1, 1, nan]\n", {}, "x.toml:4:20",
               {"parallel.balance.speeds[3]: must be a finite number, got nan"});
  expect_error(four + "[cluster.emulate]\nslowdown = [0.5, 1, 1, 1]\n", {}, "x.toml:4:13",
               {"cluster.emulate.slowdown[0]: must be at least 1, got 0.5", "1 is unslowed"});
  // The elements are checked before their count.
  expect_error("[cluster.emulate]\nslowdown = [1, 0]\n", {}, "x.toml:2:16",
               {"cluster.emulate.slowdown[1]: must be at least 1, got 0"});
}

BOOST_AUTO_TEST_CASE(one_entry_per_rank) {
  const dp::JobError e = error_of("[launch]\nranks = 4\n[parallel.balance]\nspeeds = [1, 2, 3]\n");
  BOOST_TEST(e.line() ==
             "x.toml:4:10: error: parallel.balance.speeds: must have launch.ranks (4) entries, one per rank, "
             "got 3 (hint: give one speed per rank, or leave parallel.balance.speeds empty)");
  // launch.ranks at its default (1).
  expect_error("[cluster.emulate]\nslowdown = [1, 2]\n", {}, "x.toml:2:12",
               {"cluster.emulate.slowdown: must have launch.ranks (1) entries, one per rank, got 2",
                "give one factor per rank, or leave cluster.emulate.slowdown empty"});
  // Ranks from an override: the error points at the array in the file.
  expect_error("[cluster.emulate]\nslowdown = [1, 2]\n", {"launch.ranks=3"}, "x.toml:2:12",
               {"must have launch.ranks (3) entries"});
  BOOST_TEST(dp::parse_job("[cluster.emulate]\nslowdown = [1, 2]\n", "t.toml", {"launch.ranks=2"})
                 .cluster.emulate.slowdown.size() == 2u);
  // ranks = 0 is launch.ranks' own error, not the array's.
  expect_error("[launch]\nranks = 0\n[parallel.balance]\nspeeds = [1]\n", {}, "x.toml:2:9",
               {"launch.ranks: must be at least 1, got 0"});
}

BOOST_AUTO_TEST_CASE(fluctuating_rank_and_window) {
  expect_error("[launch]\nranks = 4\n[cluster.emulate]\nfluctuate_rank = 4\n", {}, "x.toml:4:18",
               {"cluster.emulate.fluctuate_rank: must be less than launch.ranks (4), got 4", "numbered from 0"});
  expect_error("[cluster.emulate]\nfluctuate_rank = 1\n", {}, "x.toml:2:18",
               {"must be less than launch.ranks (1), got 1"});
  const dp::JobError e = error_of("[cluster.emulate]\nfluctuate_from = 10\nfluctuate_to = 5\n");
  BOOST_TEST(e.line() ==
             "x.toml:3:16: error: cluster.emulate.fluctuate_to: must be at least cluster.emulate.fluctuate_from "
             "(10), got 5 (hint: the slowed steps are [fluctuate_from, fluctuate_to); raise "
             "cluster.emulate.fluctuate_to or lower cluster.emulate.fluctuate_from)");
  // fluctuate_to left at its default (0): the error points at fluctuate_from, the key that was given.
  expect_error("[cluster.emulate]\nfluctuate_from = 10\n", {}, "x.toml:2:18",
               {"cluster.emulate.fluctuate_to: must be at least cluster.emulate.fluctuate_from (10), got 0"});
  expect_error("", {"cluster.emulate.fluctuate_from=3"}, "--set cluster.emulate.fluctuate_from=3",
               {"must be at least cluster.emulate.fluctuate_from (3), got 0"});
}

BOOST_AUTO_TEST_CASE(max_share_must_hold_the_global_batch) {
  const std::string four = "[train]\nglobal_batch = 128\n[launch]\nranks = 4\n";
  const dp::JobError e = error_of(four + "[parallel.balance]\nmax_share = 31\n");
  BOOST_TEST(e.line() ==
             "x.toml:6:13: error: parallel.balance.max_share: 4 ranks (launch.ranks) of at most 31 samples "
             "cannot hold train.global_batch (128); it needs at least 32 (hint: raise "
             "parallel.balance.max_share to 32 or more, lower train.global_batch, or set max_share = 0 (no "
             "limit))");
  BOOST_TEST(dp::parse_job(four + "[parallel.balance]\nmax_share = 32\n", "t.toml").parallel.balance.max_share ==
             32);
  BOOST_TEST(dp::parse_job(four + "[parallel.balance]\nmax_share = 0\n", "t.toml").parallel.balance.max_share == 0);
  // Uneven: 130 samples on 4 ranks need 33 each.
  expect_error("[train]\nglobal_batch = 130\n[launch]\nranks = 4\n[parallel.balance]\nmax_share = 32\n", {},
               "x.toml:6:13", {"it needs at least 33"});
  // A larger batch from an override: the error points at max_share in the file.
  expect_error(four + "[parallel.balance]\nmax_share = 40\n", {"train.global_batch=1000"}, "x.toml:6:13",
               {"cannot hold train.global_batch (1000); it needs at least 250"});
}

BOOST_AUTO_TEST_SUITE_END()
