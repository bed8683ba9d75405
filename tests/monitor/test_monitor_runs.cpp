// lib/monitor on the runs of issue 25, crafted line by line: a run killed and resumed twice (once on fewer
// ranks) is one time axis and its table is the newest invocation's; a pipeline whose stage 0 machines are
// 2x slower is named against the plan's expectation; the speed is samples over time as summary.json's
// is; a language model is reported as validation loss and perplexity, with no accuracy.
#define BOOST_TEST_MODULE monitor_runs
#include <boost/test/unit_test.hpp>
#include <fmt/format.h>

#include <cmath>
#include <regex>

#include "lib/monitor/json_value.h"
#include "lib/monitor/render.h"
#include "lib/monitor/run_record.h"
#include "tests/monitor/monitor_fixture.h"

using namespace dp::monitor;
using namespace monitor_test;

namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The pipeline line metrics.cpp writes: stage 0 on ranks 0 and 1, stage 1 on ranks 2 and 3, the plan's
// expected compute per sample of each stage's ranks (none: a line from before expectations).
std::string pipeline_line(int64_t step, double t, const std::string& expected0, const std::string& expected1) {
  const auto stage = [](int s, const std::string& ranks, const std::string& expected) {
    return fmt::format("{{\"stage\":{},\"blocks\":[{},{}],\"ranks\":[{}],\"recompute\":[],\"predicted\":{{"
                       "\"compute_ms\":20.0,\"peak_bytes\":[1,1]}},\"measured\":{{\"compute_ms\":40.0,\"wait_ms\":1.0,"
                       "\"peak_bytes\":[1,1],\"compute_ms_per_sample\":[0.6,0.6]}}{}}}",
                       s, 3 * s, 3 * s + 2, ranks,
                       expected.empty() ? "" : ",\"expected\":{\"compute_ms_per_sample\":[" + expected + "]}");
  };
  return fmt::format("{{\"kind\":\"pipeline\",\"step\":{},\"minibatches\":9,\"predicted\":{{\"minibatch_ms\":50.0,"
                     "\"bubble\":0.2}},\"measured\":{{\"minibatch_ms\":70.0,\"bubble\":0.3}},\"stages\":[{},{}],"
                     "\"t\":{}}}\n",
                     step, stage(0, "0,1", expected0), stage(1, "2,3", expected1), t);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_run_killed_and_resumed_twice_is_one_time_axis_and_the_table_is_the_newest_invocation_s) {
  TempRun run;
  // The run: 4 ranks, rank 3 three times slower, t up to 5 s.
  std::string text = start_line(4, 300);
  for (int64_t step = 10; step <= 50; step += 10)
    for (int r = 0; r < 4; ++r) text += train_line(step, r, double(step) / 10, 32, r == 3 ? 6 : 2, r == 3 ? 0.1 : 4);
  // The first resume, as files from before start lines were kept on a resume have it: no start line, its
  // "t" going back to 0.7 s.
  for (int64_t step = 60; step <= 100; step += 10)
    for (int r = 0; r < 4; ++r)
      text += train_line(step, r, 0.5 + double(step - 50) / 50, 32, r == 3 ? 6 : 2, r == 3 ? 0.1 : 4);
  // The second resume on 3 equal ranks: its start line at its own t = 0.8 s, then 0.05 s per step.
  text += start_line(3, 300, "data", 101, 0.8);
  for (int64_t step = 110; step <= 150; step += 10)
    for (int r = 0; r < 3; ++r) text += train_line(step, r, 0.8 + double(step - 100) / 20, 43, 2, 0.5);
  run.append(text);
  RunReader reader(run.dir.string());
  const Snapshot s = make_snapshot(reader.refresh(), 20);

  BOOST_TEST(reader.record().invocations.size() == 3u);
  for (size_t i = 1; i < s.curve.size(); ++i) BOOST_TEST(s.curve[i].t > s.curve[i - 1].t, "step " << s.curve[i].step);
  BOOST_TEST(s.curve[5].t == 5.0 + 0.7, boost::test_tools::tolerance(1e-9));    // step 60 goes on from 5 s
  BOOST_TEST(s.curve.back().t == 6.5 + 0.8 + 2.5, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(s.resumes.size() == 2u);
  BOOST_TEST(s.resumes[1].ranks == 3);
  BOOST_TEST(s.resumes[1].first_step == 101);
  // The newest invocation's 3 ranks only: none of them slow; rank 3 is gone.
  BOOST_TEST(s.ranks == 3);
  BOOST_TEST(s.rank_figures.size() == 3u);
  BOOST_TEST(s.slow.slow.empty(), s.slow.reason);
  BOOST_TEST(s.window_first_step == 110);
  BOOST_TEST(s.window_steps == 5);
  BOOST_TEST(s.seconds_per_step == 0.05, boost::test_tools::tolerance(1e-9));
  const std::string view = text_view(s, 100);
  BOOST_TEST(view.find("<- slow") == std::string::npos, view);
  BOOST_TEST(view.find("resumed  2 time(s); the newest from step 100 on 3 rank(s)") != std::string::npos, view);
  const JsonValue json = JsonValue::parse(json_view(s), "json_view");
  BOOST_TEST(json.number("ranks", 0) == 3.0);
  BOOST_TEST(json.find("rank_figures")->items().size() == 3u);
  BOOST_TEST(json.find("resumes")->items().size() == 2u);
  // The plot: every invocation's rank 3 wait line ends where it left (one line, not drawn at 0 after),
  // each resume a dashed line in each panel.
  const std::string svg = svg_plot(s);
  BOOST_TEST(count(svg, "<polyline fill=\"none\" stroke=\"#8c564b\"") == 1u);
  BOOST_TEST(count(svg, "stroke-dasharray") == 6u);
  BOOST_TEST(svg.find(">resumed on 3<") != std::string::npos);

  // A third resume that has not logged a step yet: no ranks to show, none slow, time still goes on.
  run.append(start_line(2, 300, "data", 151, 0.6));
  const Snapshot just = make_snapshot(reader.refresh(), 20);
  BOOST_TEST(just.ranks == 2);
  BOOST_TEST(just.rank_figures.empty());
  BOOST_TEST(just.slow.slow.empty());
  BOOST_TEST(just.elapsed_seconds == 9.8 + 0.6, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(text_view(just, 100).find("no step logged yet") != std::string::npos, text_view(just, 100));
}

BOOST_AUTO_TEST_CASE(under_a_pipeline_a_slow_machine_is_named_against_the_plan_s_expectation_for_its_stage) {
  // Stage 0 (ranks 0, 1) is planned at 0.5 ms per sample, stage 1 (ranks 2, 3) at 0.25; the machines of
  // stage 0 are 2x slower than described and the compute of every rank is its whole step.
  const auto run_with = [](const std::string& expected0, const std::string& expected1) {
    TempRun run(expected0.empty() ? "_none" : "_plan");
    std::string text = start_line(4, 100, "pipeline");
    for (int64_t step = 1; step <= 10; ++step)
      for (int r = 0; r < 4; ++r) text += train_line(step, r, double(step), 64, r < 2 ? 64.0 : 16.0, 0.1, r / 2);
    text += pipeline_line(10, 10.1, expected0, expected1);
    run.append(text);
    RunReader reader(run.dir.string());
    return make_snapshot(reader.refresh(), 10);
  };
  const Snapshot s = run_with("0.5,0.5", "0.25,0.25");
  BOOST_TEST(s.rank_figures[0].expected_ms_per_sample == 0.5);
  BOOST_TEST(s.slow.slow == (std::vector<int>{0, 1}), s.slow.reason);
  BOOST_TEST(s.slow.ratio[0] == 2.0, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(s.slow.reason.find("rank 0: compute 2.0x the others' per sample against the plan's expectation "
                                "(stage 0: 1.000 ms per sample, expected 0.500)") == 0u, s.slow.reason);
  BOOST_TEST(text_view(s, 100).find("slow rank 0: compute 2.0x") != std::string::npos);
  const JsonValue json = JsonValue::parse(json_view(s), "json_view");
  BOOST_TEST(json.find("rank_figures")->items()[2].number("expected_ms_per_sample", -1) == 0.25);

  // The same times as the plan expects them (stage 0 does 4x the work): nobody is slow.
  const Snapshot planned = run_with("1.0,1.0", "0.25,0.25");
  BOOST_TEST(planned.slow.slow.empty(), planned.slow.reason);
  // Without the expectation (lines from before it), only replicas are compared: nobody, as before.
  const Snapshot old = run_with("", "");
  BOOST_TEST(old.slow.slow.empty());
  BOOST_TEST(old.slow.reason.find("carry no expectation") != std::string::npos, old.slow.reason);

  // One replica slower than its stage's other one, against the plan: that replica alone.
  std::vector<RankFigures> ranks{figures(0, 32, 32, 0, 0.25, 0), figures(1, 32, 16, 0, 0.25, 0),
                                 figures(2, 32, 8, 0, 0.25, 1), figures(3, 32, 8.4, 0, 0.25, 1)};
  for (RankFigures& f : ranks) f.expected_ms_per_sample = f.stage == 0 ? 0.5 : 0.25;
  BOOST_TEST(find_slow_ranks(ranks, true).slow == std::vector<int>{0});
}

BOOST_AUTO_TEST_CASE(the_speed_is_samples_over_time_and_agrees_with_the_summary) {
  // CGP's steps come in unevenly: the mean of 10000 and 100 samples/s would say 5050; 2 steps of
  // 128 samples in 1/10000 + 1/100 s of 128 samples each is 198.
  TempRun run;
  std::string text = start_line(2, 4, "cgp");
  for (int64_t step = 1; step <= 4; ++step)
    for (int r = 0; r < 2; ++r)
      text += train_line(step, r, double(step), 64, 30, 1, -1, step % 2 ? 10000.0 : 100.0);
  run.append(text);
  run.summary(R"({"test_accuracy": 0.8, "test_loss": 0.5, "samples_per_sec": 198.0, "steps": 4})");
  RunReader reader(run.dir.string());
  const Snapshot s = make_snapshot(reader.refresh(), 10);
  BOOST_TEST(s.samples_per_sec == 2 / (1 / 10000.0 + 1 / 100.0), boost::test_tools::tolerance(1e-9));
  const std::string view = text_view(s, 100);
  BOOST_TEST(view.find("speed    198 samples/s") != std::string::npos, view);
  BOOST_TEST(view.find("finished test accuracy 0.8000, test loss 0.5000, 198 samples/s") != std::string::npos, view);
}

BOOST_AUTO_TEST_CASE(a_language_model_is_reported_as_validation_loss_and_perplexity_without_accuracy) {
  TempRun run;
  std::string text = start_line(2, 100, "data", 1, 0.01, true);
  for (int64_t step = 10; step <= 50; step += 10)
    for (int r = 0; r < 2; ++r) text += train_line(step, r, double(step) / 10, 16, 2, 0);
  run.append(text);
  RunReader reader(run.dir.string());
  BOOST_TEST(make_snapshot(reader.refresh(), 10).language_model);  // the start line says so
  run.append("{\"kind\":\"eval\",\"step\":50,\"epoch\":0,\"test_loss\":1.786,\"perplexity\":5.9655,"
             "\"train_seconds\":5,\"t\":5.1}\n");
  const Snapshot live = make_snapshot(reader.refresh(), 10);
  BOOST_TEST(live.language_model);
  const std::string view = text_view(live, 100);
  BOOST_TEST(view.find("validation loss 1.7860 (perplexity 5.97) at step 50") != std::string::npos, view);
  BOOST_TEST(view.find("accuracy") == std::string::npos, view);
  JsonValue json = JsonValue::parse(json_view(live), "json_view");
  BOOST_TEST(json.find("language_model")->as_bool());
  BOOST_TEST(json.find("last_eval")->number("perplexity", -1) == 5.9655);
  BOOST_TEST(!json.find("last_eval")->find("test_accuracy"));
  const std::string svg = svg_plot(live);
  BOOST_TEST(svg.find(">validation loss<") != std::string::npos);
  BOOST_TEST(svg.find(">test loss<") == std::string::npos);

  run.summary(R"({"language_model": true, "val_loss": 1.786, "perplexity": 5.9655, "test_loss": 1.786,)"
              R"( "samples_per_sec": 80.0, "wall_seconds": 6, "steps": 100})");
  const Snapshot done = make_snapshot(reader.refresh(), 10);
  const std::string final_view = text_view(done, 100);
  BOOST_TEST(final_view.find("finished validation loss 1.7860 nats per token, perplexity 5.97, 80 samples/s") !=
                 std::string::npos, final_view);
  BOOST_TEST(final_view.find("accuracy") == std::string::npos, final_view);
  json = JsonValue::parse(json_view(done), "json_view");
  BOOST_TEST(json.find("summary")->number("perplexity", -1) == 5.9655);
  BOOST_TEST(!json.find("summary")->find("test_accuracy"));

  // A run from before start lines said so: its summary's val_loss makes it a language model, and the
  // perplexity is exp of the loss.
  TempRun older("_older");
  older.append(start_line(2, 100) + train_line(10, 0, 1, 16, 2, 0) + train_line(10, 1, 1, 16, 2, 0));
  older.summary(R"({"val_loss": 2.0, "val_accuracy": 0.4, "test_accuracy": 0.4, "test_loss": 2.0, "steps": 10})");
  RunReader older_reader(older.dir.string());
  const Snapshot o = make_snapshot(older_reader.refresh(), 10);
  BOOST_TEST(o.language_model);
  BOOST_TEST(o.summary->perplexity == std::exp(2.0), boost::test_tools::tolerance(1e-9));
  BOOST_TEST(text_view(o, 100).find("accuracy") == std::string::npos, text_view(o, 100));
}
