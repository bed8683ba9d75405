// lib/monitor: the JSON reader, the run directory reader (partial lines, truncation, not a run), the
// slow-rank verdict (plain data parallelism, I-DAT, waiting ranks, pipelines), progress and ETA, and the
// three renderings, on metrics written here line by line.
#define BOOST_TEST_MODULE monitor
#include <boost/test/unit_test.hpp>
#include <fmt/format.h>

#include <fstream>

#include "lib/core/error.h"
#include "lib/monitor/json_value.h"
#include "lib/monitor/render.h"
#include "lib/monitor/run_record.h"
#include "tests/monitor/monitor_fixture.h"

using namespace dp::monitor;
using namespace monitor_test;

BOOST_AUTO_TEST_CASE(json_reader_reads_what_dptrain_writes_and_rejects_truncated_lines) {
  const JsonValue v = JsonValue::parse(R"({"a":1.5e3,"s":"x\"y\u00e9","l":[1,{"b":true,"c":false}],"n":null})", "here");
  BOOST_TEST(v.number("a", 0) == 1500.0);
  BOOST_TEST(v.text("s") == "x\"y\xc3\xa9");
  BOOST_TEST(v.find("l")->items().size() == 2u);
  BOOST_TEST(v.find("l")->items()[1].find("b")->as_bool());
  BOOST_TEST(!v.find("l")->items()[1].find("c")->as_bool());
  BOOST_TEST(v.number("missing", -1) == -1.0);
  BOOST_CHECK_THROW(JsonValue::parse(R"({"a":1,"b":)", "here"), dp::DataError);
  BOOST_CHECK_THROW(JsonValue::parse(R"({"a":1} x)", "here"), dp::DataError);
}

BOOST_AUTO_TEST_CASE(reader_leaves_a_partial_line_until_it_is_complete_and_restarts_after_truncation) {
  TempRun run;
  run.append(start_line(2, 100) + train_line(10, 0, 1.0, 64, 5, 0));
  const std::string second = train_line(10, 1, 1.0, 64, 5, 0);
  run.append(second.substr(0, 40));  // being written
  RunReader reader(run.dir.string());
  BOOST_TEST(reader.refresh().train.size() == 1u);
  BOOST_TEST(reader.record().skipped_lines == 0);
  run.append(second.substr(40));
  BOOST_TEST(reader.refresh().train.size() == 2u);
  BOOST_TEST(reader.record().train[1].rank == 1);
  BOOST_TEST(reader.record().train[1].resident_bytes == 5e6);
  BOOST_TEST(reader.record().start->total_steps == 100);
  // A resumed run drops lines after its checkpoint: the file shrinks and is read again from the start.
  std::ofstream(run.dir / "metrics.jsonl", std::ios::trunc) << start_line(2, 100);
  BOOST_TEST(reader.refresh().train.empty());
  BOOST_TEST(!reader.record().summary.has_value());
  std::ofstream(run.dir / "summary.json") << R"({"test_accuracy": 0.9, "steps": 100, "memory": [)"
                                             R"({"rank": 0, "allocated_peak_bytes": 10, "resident_peak_bytes": 20}]})";
  BOOST_TEST(reader.refresh().summary->test_accuracy == 0.9);
  BOOST_TEST(reader.record().summary->resident_peak_bytes[0] == 20.0);
}

BOOST_AUTO_TEST_CASE(a_directory_that_is_not_a_run_is_a_usage_error) {
  TempRun run;
  BOOST_CHECK_THROW(RunReader(run.dir.string()), dp::UsageError);
  BOOST_CHECK_THROW(RunReader((run.dir / "missing").string()), dp::UsageError);
  std::ofstream(run.dir / "job.toml") << "[job]\n";
  BOOST_CHECK_NO_THROW(RunReader(run.dir.string()));
}

BOOST_AUTO_TEST_CASE(plain_data_parallelism_names_the_rank_that_computes_slowly_not_those_that_wait) {
  // Equal shares: rank 2 computes 3x longer; ranks 0, 1, 3 wait for it.
  const std::vector<RankFigures> ranks{figures(0, 32, 2, 4.1, 0.25), figures(1, 32, 2.1, 4.0, 0.25),
                                       figures(2, 32, 6.1, 0.1, 0.25), figures(3, 32, 1.9, 4.2, 0.25)};
  const SlowVerdict v = find_slow_ranks(ranks, false);
  BOOST_TEST(v.slow == std::vector<int>{2});
  BOOST_TEST(v.waiting == (std::vector<int>{0, 1, 3}));
  BOOST_TEST(v.ratio[0] == 3.0, boost::test_tools::tolerance(0.05));
  BOOST_TEST(v.reason.find("rank 2: compute 3.0x the others' per sample") == 0u);
  BOOST_TEST(v.reason.find("ranks 0,1,3 wait for it") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_rank_slowed_by_contention_beside_a_much_slower_one_is_not_named) {
  // Measured on 4 ranks sharing 2 cores, rank 2 emulated 3x slower: rank 3 computes 2x the others too.
  const std::vector<RankFigures> ranks{figures(0, 32, 0.44, 7.1, 0.25), figures(1, 32, 0.62, 6.9, 0.25),
                                       figures(2, 32, 4.42, 3.3, 0.25), figures(3, 32, 0.95, 8.1, 0.25)};
  BOOST_TEST(find_slow_ranks(ranks, false).slow == std::vector<int>{2});
  // Two ranks both about 3x slower are both named.
  const std::vector<RankFigures> two{figures(0, 32, 1, 4, 0.25), figures(1, 32, 3, 0.1, 0.25),
                                     figures(2, 32, 3.3, 0.1, 0.25), figures(3, 32, 1.1, 4, 0.25)};
  BOOST_TEST(find_slow_ranks(two, false).slow == (std::vector<int>{1, 2}));
}

BOOST_AUTO_TEST_CASE(under_idat_the_slow_rank_is_the_one_with_the_small_share) {
  // I-DAT has balanced the compute times: rank 2 takes 14 samples in the time the others take 38.
  const std::vector<RankFigures> ranks{figures(0, 38, 4, 0.2, 0.297), figures(1, 38, 4.1, 0.1, 0.297),
                                       figures(2, 14, 4.2, 0.1, 0.109), figures(3, 38, 3.9, 0.3, 0.297)};
  const SlowVerdict v = find_slow_ranks(ranks, false);
  BOOST_TEST(v.slow == std::vector<int>{2});
  BOOST_TEST(v.waiting.empty());
  BOOST_TEST(v.reason.find("gets 10.9% of the batch") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(waiting_alone_never_makes_a_rank_slow_and_balanced_ranks_have_none) {
  const std::vector<RankFigures> waits{figures(0, 32, 2, 9, 0.25), figures(1, 32, 2.1, 0.1, 0.25),
                                       figures(2, 32, 2.2, 0.1, 0.25), figures(3, 32, 1.9, 0.2, 0.25)};
  BOOST_TEST(find_slow_ranks(waits, false).slow.empty());
  // Pipeline stages do different work: compared only with the replicas of their own stage.
  const std::vector<RankFigures> stages{figures(0, 32, 2, 0, 0.25, 0), figures(1, 32, 8, 0, 0.25, 1),
                                        figures(2, 32, 8.2, 0, 0.25, 1), figures(3, 32, 24, 0, 0.25, 1)};
  const SlowVerdict v = find_slow_ranks(stages, true);
  BOOST_TEST(v.slow == std::vector<int>{3});
}

BOOST_AUTO_TEST_CASE(snapshot_measures_progress_eta_and_the_window_and_renders_them) {
  TempRun run;
  std::string text = start_line(4, 200);
  for (int64_t step = 10; step <= 50; step += 10)  // 0.1 s per step; rank 2 three times slower per sample
    for (int r = 0; r < 4; ++r)
      text += train_line(step, r, double(step) / 10, 32, r == 2 ? 6 : 2, r == 2 ? 0.1 : 4);
  text += "{\"kind\":\"eval\",\"step\":50,\"epoch\":0,\"test_loss\":0.5,\"test_accuracy\":0.8,\"train_seconds\":5,\"t\":5.1}\n";
  run.append(text);
  RunReader reader(run.dir.string());
  const Snapshot s = make_snapshot(reader.refresh(), 3);
  BOOST_TEST(s.state == "running");
  BOOST_TEST(s.step == 50);
  BOOST_TEST(s.progress == 0.25, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(s.seconds_per_step == 0.1, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(s.eta_seconds == 15.0, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(s.window_first_step == 30);
  BOOST_TEST(s.window_steps == 3);
  BOOST_TEST(s.rank_figures[2].share == 0.25, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(s.slow.slow == std::vector<int>{2});

  const std::string view = text_view(s, 100);
  BOOST_TEST(view.find("slow rank 2: compute 3.0x") != std::string::npos, view);
  BOOST_TEST(view.find("step 50 of 200") != std::string::npos, view);
  BOOST_TEST(view.find("ETA 15s") != std::string::npos, view);
  const JsonValue json = JsonValue::parse(json_view(s), "json_view");
  BOOST_TEST(json.find("slow")->find("ranks")->items().size() == 1u);
  BOOST_TEST(json.find("slow")->find("ranks")->items()[0].as_number() == 2.0);
  BOOST_TEST(json.number("eta_seconds", -1) == 15.0);
  BOOST_TEST(json.find("rank_figures")->items()[0].number("resident_bytes", -1) == 5e6);
  const std::string svg = svg_plot(s);
  BOOST_TEST(svg.find("<polyline fill=\"none\" stroke=\"#1f77b4\"") != std::string::npos);  // the loss
  BOOST_TEST(svg.find("stroke=\"#2ca02c\"") != std::string::npos);                          // samples/s
  BOOST_TEST(svg.find(">rank 3<") != std::string::npos);                                    // the legend
  BOOST_TEST(svg.find("fill=\"#ff7f0e\"") != std::string::npos);                            // the test loss

  std::ofstream(run.dir / "summary.json") << R"({"test_accuracy": 0.8, "steps": 200})";
  const Snapshot done = make_snapshot(reader.refresh(), 3);
  BOOST_TEST(done.state == "finished");
  BOOST_TEST(text_view(done, 100).find("FINISHED") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(after_a_resume_time_goes_on_and_the_rate_is_the_new_process_s) {
  TempRun run;
  std::string text = start_line(2, 200);
  for (int64_t step = 10; step <= 50; step += 10)  // 0.1 s per step up to t = 5
    for (int r = 0; r < 2; ++r) text += train_line(step, r, double(step) / 10, 64, 2, 0);
  // The resumed process: its own start line at its t = 1, then 0.02 s per step from step 51.
  text += "{\"kind\":\"start\",\"name\":\"t\",\"strategy\":\"data\",\"device\":\"cpu\",\"ranks\":2,"
          "\"total_steps\":200,\"steps_per_epoch\":100,\"first_step\":51,\"global_batch\":128,\"t\":1.0}\n";
  for (int64_t step = 60; step <= 100; step += 10)
    for (int r = 0; r < 2; ++r) text += train_line(step, r, 1.0 + double(step - 50) / 50, 64, 2, 0);
  run.append(text);
  RunReader reader(run.dir.string());
  const Snapshot s = make_snapshot(reader.refresh(), 10);
  for (size_t i = 1; i < s.curve.size(); ++i) BOOST_TEST(s.curve[i].t > s.curve[i - 1].t);
  BOOST_TEST(s.curve.back().t == 5.0 + 2.0, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(s.seconds_per_step == 0.02, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(s.eta_seconds == 100 * 0.02, boost::test_tools::tolerance(1e-9));
}
