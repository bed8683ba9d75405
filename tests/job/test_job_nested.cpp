// Tests of nested tables ([parallel.comm] inside [parallel]): the schema's table tree, reading them (headers,
// dotted keys, inline tables), their errors with FILE:LINE:COL and did-you-mean hints, --set of a nested
// key, and emission (TOML round trip with a [parallel.comm] header, JSON nested objects).
#define BOOST_TEST_MODULE job_nested
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "job/job_testing.h"
#include "lib/job/schema.h"

using namespace job_testing;
namespace jd = dp::job_detail;

BOOST_AUTO_TEST_SUITE(schema)

BOOST_AUTO_TEST_CASE(table_tree) {
  BOOST_TEST(jd::is_table("parallel"));
  BOOST_TEST(jd::is_table("parallel.comm"));
  BOOST_TEST(!jd::is_table("comm"));
  BOOST_TEST(jd::parent_table("parallel.comm") == "parallel");
  BOOST_TEST(jd::parent_table("parallel") == "");
  BOOST_TEST(jd::leaf_name("parallel.comm") == "comm");
  BOOST_TEST(jd::sub_tables("parallel") == (std::vector<std::string>{"parallel.comm", "parallel.balance", "parallel.cgp",
                                                                        "parallel.pipeline"}),
             boost::test_tools::per_element());
  BOOST_TEST(jd::sub_tables("train").empty());
  const auto top = jd::sub_tables("");
  BOOST_TEST(top == (std::vector<std::string>{"job", "model", "data", "optim", "train", "parallel", "cluster",
                                              "launch", "checkpoint", "log"}),
             boost::test_tools::per_element());
  const jd::KeySpec* k = jd::find_dotted("parallel.comm.algorithm");
  BOOST_REQUIRE(k);
  BOOST_TEST(k->table == "parallel.comm");
  BOOST_TEST(k->name == "algorithm");
  BOOST_TEST(k->dotted() == "parallel.comm.algorithm");
  BOOST_TEST(jd::first_key_below("parallel") == "parallel.strategy");
  BOOST_TEST(jd::first_key_below("parallel.comm") == "parallel.comm.algorithm");
}

// A parent lists its tables before its children's, and no key is named like a table beside it.
BOOST_AUTO_TEST_CASE(tables_and_keys_do_not_collide) {
  const auto& tables = jd::table_names();
  for (std::size_t i = 0; i < tables.size(); ++i) {
    BOOST_TEST_CONTEXT(tables[i]) {
      const std::string_view parent = jd::parent_table(tables[i]);
      if (!parent.empty()) {
        const auto at = std::find(tables.begin(), tables.end(), parent);
        BOOST_TEST((at != tables.end() && at < tables.begin() + static_cast<std::ptrdiff_t>(i)));
        BOOST_TEST(!jd::find_key(parent, jd::leaf_name(tables[i])));
      }
    }
  }
  for (const auto& k : jd::schema()) BOOST_TEST(k.name.find('.') == std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(reading)

BOOST_AUTO_TEST_CASE(defaults) {
  const dp::CommSection c = dp::parse_job("", "t.toml").parallel.comm;
  BOOST_TEST(c.algorithm == dp::CommAlgorithm::mra);
  BOOST_TEST(c.bucket_mb == 25.0);
  BOOST_TEST(c.first_bucket_mb == 1.0);
  BOOST_TEST(c.overlap);
  BOOST_TEST(!c.overlap_forward);
  BOOST_TEST(c.sharded_update);
  BOOST_TEST(same(dp::parse_job("[parallel.comm]\n", "t.toml"), dp::Job{}));
}

BOOST_AUTO_TEST_CASE(header_dotted_keys_and_inline_tables) {
  const dp::Job a = dp::parse_job(
      "[parallel]\nstrategy = \"data\"\n\n[parallel.comm]\nalgorithm = \"native\"\nbucket_mb = 8\n",
      "t.toml");
  BOOST_TEST(a.parallel.comm.algorithm == dp::CommAlgorithm::native);
  BOOST_TEST(a.parallel.comm.bucket_mb == 8.0);  // an integer for a float key
  // The child's header before the parent's is valid TOML.
  const dp::Job b =
      dp::parse_job("[parallel.comm]\noverlap = false\n[parallel]\nstrategy = \"data\"\n", "t.toml");
  BOOST_TEST(!b.parallel.comm.overlap);
  const dp::Job c = dp::parse_job("parallel.comm.algorithm = \"ring\"\n[train]\nepochs = 2\n", "t.toml");
  BOOST_TEST(c.parallel.comm.algorithm == dp::CommAlgorithm::ring);
  const dp::Job d =
      dp::parse_job("[parallel]\ncomm = { sharded_update = false, first_bucket_mb = 0.5 }\n", "t.toml");
  BOOST_TEST(!d.parallel.comm.sharded_update);
  BOOST_TEST(d.parallel.comm.first_bucket_mb == 0.5);
  const dp::Job e =
      dp::parse_job("parallel = { comm = { algorithm = \"mra\", overlap = false } }\n", "t.toml");
  BOOST_TEST(!e.parallel.comm.overlap);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(errors)

BOOST_AUTO_TEST_CASE(unknown_key_in_nested_table) {
  const dp::JobError e =
      error_of("[parallel.comm]\nalgorithm = \"ring\"\nbuket_mb = 4\n", {}, "configs/x.toml");
  BOOST_TEST(
      e.line() ==
      "configs/x.toml:3:1: error: unknown key 'parallel.comm.buket_mb' (hint: did you mean 'bucket_mb'?)");
  expect_error(
      "[parallel.comm]\nspeed = 1\n", {}, "x.toml:2:1",
      {"unknown key 'parallel.comm.speed'",
       "valid keys of [parallel.comm]: algorithm, bucket_mb, first_bucket_mb, overlap, overlap_forward, "
       "sharded_update"});
  expect_error("[parallel.comm]\nepochs = 1\n", {}, "x.toml:2:1",
               {"unknown key 'parallel.comm.epochs'", "'epochs' is a key of [train]"});
  // A key of [parallel.comm] one level up, and a table below a table that has none.
  expect_error("[parallel]\nalgorithm = \"ring\"\n", {}, "x.toml:2:1",
               {"unknown key 'parallel.algorithm'", "'algorithm' is a key of [parallel.comm]"});
  expect_error("[parallel.comm.extra]\nx = 1\n", {}, "x.toml:1:16", {"unknown key 'parallel.comm.extra'"});
  // Outside any table.
  expect_error("bucket_mb = 4\n", {}, "x.toml:1:1",
               {"unknown key 'bucket_mb' outside any table", "'bucket_mb' is a key of [parallel.comm]"});
}

BOOST_AUTO_TEST_CASE(unknown_nested_table) {
  const dp::JobError e =
      error_of("[parallel]\nstrategy = \"data\"\n\n[parallel.comms]\nalgorithm = \"ring\"\n");
  BOOST_TEST(e.line() ==
             "x.toml:4:1: error: unknown table '[parallel.comms]' (hint: did you mean '[parallel.comm]'?)");
  expect_error("[parallel.network]\n", {}, "x.toml:1:1",
               {"unknown table '[parallel.network]'",
                "valid tables in [parallel]: [parallel.comm], [parallel.balance]"});
  // A nested table written at the top level, and a misspelt parent.
  expect_error("[comm]\nalgorithm = \"ring\"\n", {}, "x.toml:1:1",
               {"unknown table '[comm]'", "did you mean '[parallel.comm]'?"});
  expect_error("[paralel.comm]\n", {}, "x.toml:1:1",
               {"unknown table '[paralel]'", "did you mean '[parallel]'?"});
  // A scalar named like the table, as a key.
  expect_error("[parallel]\ncomms = 1\n", {}, "x.toml:2:1",
               {"unknown key 'parallel.comms'", "did you mean the table '[parallel.comm]'?"});
}

BOOST_AUTO_TEST_CASE(scalar_where_the_table_should_be) {
  const dp::JobError e = error_of("[parallel]\ncomm = 3\n");
  BOOST_TEST(e.line() ==
             "x.toml:2:8: error: parallel.comm: expected a table, got an integer "
             "(hint: write the keys under a [parallel.comm] header)");
  expect_error("[parallel]\ncomm = \"ring\"\n", {}, "x.toml:2:8",
               {"parallel.comm: expected a table, got a string"});
  expect_error(
      "[[parallel.comm]]\nalgorithm = \"ring\"\n", {}, "x.toml:1:1",
      {"parallel.comm: expected a table, got an array", "write [parallel.comm], not [[parallel.comm]]"});
  expect_error("parallel = 2\n", {}, "x.toml:1:12",
               {"parallel: expected a table, got an integer", "[parallel] header"});
}

BOOST_AUTO_TEST_CASE(wrong_value_types) {
  const dp::JobError e = error_of("[parallel.comm]\nbucket_mb = \"25MB\"\n");
  BOOST_TEST(e.line() == "x.toml:2:13: error: parallel.comm.bucket_mb: expected a number, got a string");
  expect_error("[parallel.comm]\noverlap = \"yes\"\n", {}, "x.toml:2:11",
               {"parallel.comm.overlap: expected a boolean, got a string", "true or false"});
  expect_error("[parallel.comm]\nalgorithm = 3\n", {}, "x.toml:2:13",
               {"parallel.comm.algorithm: expected a string, got an integer", "quoted"});
  expect_error("[parallel]\ncomm = { sharded_update = 1 }\n", {}, "x.toml:2:27",
               {"parallel.comm.sharded_update: expected a boolean, got an integer"});
}

BOOST_AUTO_TEST_CASE(first_bucket_not_above_bucket) {
  expect_error("[parallel.comm]\nbucket_mb = 4\nfirst_bucket_mb = 8\n", {}, "x.toml:3:19",
               {"parallel.comm.first_bucket_mb: must not exceed parallel.comm.bucket_mb (4), got 8",
                "(hint: lower parallel.comm.first_bucket_mb or raise parallel.comm.bucket_mb)"});
  // first_bucket_mb left at its default (1): the error points at bucket_mb, the key that was given.
  expect_error("[parallel.comm]\nbucket_mb = 0.5\n", {}, "x.toml:2:13",
               {"parallel.comm.first_bucket_mb: must not exceed parallel.comm.bucket_mb (0.5), got 1"});
  expect_error("", {"parallel.comm.bucket_mb=0.5"}, "--set parallel.comm.bucket_mb=0.5",
               {"must not exceed parallel.comm.bucket_mb (0.5)"});
  const dp::Job j = dp::parse_job("[parallel.comm]\nbucket_mb = 2\nfirst_bucket_mb = 2\n", "t.toml");
  BOOST_TEST(j.parallel.comm.first_bucket_mb == 2.0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(overrides)

BOOST_AUTO_TEST_CASE(set_nested_keys) {
  const dp::Job j = dp::parse_job("[parallel.comm]\nalgorithm = \"native\"\n", "t.toml",
                                  {"parallel.comm.algorithm=ring", "parallel.comm.bucket_mb=50",
                                   "parallel.comm.overlap=false", " parallel.comm.sharded_update = false "});
  BOOST_TEST(j.parallel.comm.algorithm == dp::CommAlgorithm::ring);
  BOOST_TEST(j.parallel.comm.bucket_mb == 50.0);
  BOOST_TEST(!j.parallel.comm.overlap);
  BOOST_TEST(!j.parallel.comm.sharded_update);
  // Into a file without the table, or without its parent.
  BOOST_TEST(
      dp::parse_job("[parallel]\n", "t.toml", {"parallel.comm.algorithm=native"}).parallel.comm.algorithm ==
      dp::CommAlgorithm::native);
  BOOST_TEST(dp::parse_job("", "t.toml", {"parallel.comm.algorithm=\"ring\""}).parallel.comm.algorithm ==
             dp::CommAlgorithm::ring);
  // Into an inline table of the file.
  const dp::Job k =
      dp::parse_job("parallel = { comm = { overlap = false } }\n", "t.toml", {"parallel.comm.bucket_mb=10"});
  BOOST_TEST(!k.parallel.comm.overlap);
  BOOST_TEST(k.parallel.comm.bucket_mb == 10.0);
}

BOOST_AUTO_TEST_CASE(set_nested_errors) {
  const dp::JobError e = error_of("", {"parallel.comm.algorithm=rign"});
  BOOST_TEST(e.line() ==
             "--set parallel.comm.algorithm=rign: error: parallel.comm.algorithm: unknown value "
             "'rign' (hint: did you mean 'ring'? valid values: native, ring, mra)");
  expect_error("", {"parallel.comm.algoritm=ring"}, "--set parallel.comm.algoritm=ring",
               {"unknown key 'parallel.comm.algoritm'", "did you mean 'parallel.comm.algorithm'?"});
  expect_error("", {"parallel.comms.algorithm=ring"}, "--set parallel.comms.algorithm=ring",
               {"did you mean 'parallel.comm.algorithm'?"});
  expect_error("", {"parallel.network.speed=1"}, "--set parallel.network.speed=1",
               {"unknown key 'parallel.network.speed'",
                "valid tables in [parallel]: [parallel.comm], [parallel.balance]"});
  expect_error("", {"parallel.comm.speed=1"}, "--set parallel.comm.speed=1",
               {"valid keys of [parallel.comm]: algorithm"});
  expect_error(
      "", {"parallel.comm=ring"}, "--set parallel.comm=ring",
      {"unknown key 'parallel.comm'", "name a key of [parallel.comm]: parallel.comm.algorithm=VALUE"});
  expect_error("", {"algorithm=ring"}, "--set algorithm=ring", {"did you mean 'parallel.comm.algorithm'?"});
  expect_error("", {"parallel.comm.overlap"}, "--set parallel.comm.overlap",
               {"expected KEY=VALUE", "write parallel.comm.overlap=VALUE"});
  expect_error("", {"parallel.comm.overlap=yes"}, "--set parallel.comm.overlap=yes",
               {"parallel.comm.overlap: expected a boolean, got a string"});
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(emit)

BOOST_AUTO_TEST_CASE(toml_writes_a_nested_header_that_reads_back) {
  const dp::Job j = dp::parse_job(kFull, "full.toml", {"parallel.comm.algorithm=native"});
  const std::string t = dp::job_to_toml(j);
  BOOST_TEST_INFO(t);
  for (const char* s : {"\n[parallel]\nstrategy = 'cgp'\n", "\n[parallel.comm]\nalgorithm = 'native'\n",
                        "\nbucket_mb = 4.5\n", "\nfirst_bucket_mb = 0.25\n", "\noverlap = false\n",
                        "\nsharded_update = false\n"}) {
    BOOST_TEST_INFO("wanted: " << s);
    BOOST_TEST((t.find(s) != std::string::npos));
  }
  const dp::Job back = dp::parse_job(t, "emitted.toml");
  BOOST_TEST(back.parallel.comm.algorithm == dp::CommAlgorithm::native);
  BOOST_TEST(back.parallel.comm.bucket_mb == 4.5);
  BOOST_TEST(!back.parallel.comm.overlap);
  BOOST_TEST(same(back, j));
  BOOST_TEST(dp::job_to_toml(back) == t);
  // Changing only a nested key changes the text (same() compares texts).
  dp::Job other = j;
  other.parallel.comm.first_bucket_mb = 0.5;
  BOOST_TEST(!same(other, j));
}

BOOST_AUTO_TEST_CASE(json_nests_objects) {
  dp::Job j;
  j.parallel.comm.algorithm = dp::CommAlgorithm::ring;
  const std::string s = dp::job_to_json(j);
  BOOST_TEST_INFO(s);
  const auto parallel = s.find("\"parallel\" : {");
  const auto comm = s.find("\"comm\" : {", parallel);
  BOOST_REQUIRE(parallel != std::string::npos);
  BOOST_REQUIRE(comm != std::string::npos);
  for (const char* k : {"\"algorithm\" : \"ring\"", "\"bucket_mb\" : 25", "\"first_bucket_mb\" : 1",
                        "\"overlap\" : true", "\"sharded_update\" : true"}) {
    BOOST_TEST_INFO("wanted: " << k);
    BOOST_TEST((s.find(k, comm) != std::string::npos));
  }
  BOOST_TEST((s.find("\"parallel.comm\"") == std::string::npos));
}

BOOST_AUTO_TEST_SUITE_END()
