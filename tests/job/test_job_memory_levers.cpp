// [train] micro_batch and recompute, the memory levers of a data-parallel replica: read, range-checked,
// an unknown recompute value named with the valid ones (no "auto": nothing chooses blocks for a replica),
// and both refused under strategy "pipeline", whose stages have their own.
#define BOOST_TEST_MODULE job_memory_levers
#include <boost/test/unit_test.hpp>

#include "job_testing.h"

using job_testing::error_of;
using job_testing::expect_error;
using job_testing::kFull;

BOOST_AUTO_TEST_CASE(the_levers_are_read_and_default_to_off) {
  const dp::Job full = dp::parse_job(kFull, "full.toml");
  BOOST_TEST(full.train.micro_batch == 4);
  BOOST_TEST(full.train.recompute == dp::TrainRecompute::all);
  const dp::Job plain = dp::parse_job("", "x.toml");
  BOOST_TEST(plain.train.micro_batch == 0);
  BOOST_TEST(plain.train.recompute == dp::TrainRecompute::none);
  const dp::Job cgp = dp::parse_job("[parallel]\nstrategy = \"cgp\"\n[train]\nmicro_batch = 1\nrecompute = \"none\"\n",
                                    "x.toml");
  BOOST_TEST(cgp.train.micro_batch == 1);
}

BOOST_AUTO_TEST_CASE(bad_values_get_one_clear_line) {
  expect_error("", {"train.micro_batch=-1"}, "--set train.micro_batch=-1",
               {"--set train.micro_batch=-1: error: train.micro_batch: must be at least 0, got -1"});
  expect_error("[train]\nmicro_batch = -3\n", {}, "x.toml:2:15", {"train.micro_batch: must be at least 0, got -3"});
  expect_error("[train]\nrecompute = \"al\"\n", {}, "x.toml:2:13",
               {"train.recompute: unknown value 'al'", "valid values: none, all"});
  const dp::JobError e = error_of("[train]\nrecompute = \"auto\"\n");
  BOOST_TEST_INFO(e.line());
  BOOST_TEST(e.line().find("train.recompute: unknown value 'auto'") != std::string::npos);
  BOOST_TEST(e.hint().find("valid values: none, all") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_pipeline_uses_its_own_levers) {
  expect_error("[parallel]\nstrategy = \"pipeline\"\n[train]\nmicro_batch = 4\n", {}, "x.toml:4:15",
               {"train.micro_batch: applies to strategies \"data\" and \"cgp\", not to \"pipeline\"",
                "parallel.pipeline.micro_batches"});
  expect_error("[parallel]\nstrategy = \"pipeline\"\n[train]\nrecompute = \"all\"\n", {}, "x.toml:4:13",
               {"train.recompute: applies to strategies", "parallel.pipeline.recompute"});
  // Off, they are fine there.
  const dp::Job j =
      dp::parse_job("[parallel]\nstrategy = \"pipeline\"\n[train]\nmicro_batch = 0\nrecompute = \"none\"\n", "x.toml");
  BOOST_TEST(j.train.micro_batch == 0);
}
