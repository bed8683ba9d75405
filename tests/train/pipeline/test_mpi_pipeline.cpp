// Strategy "pipeline" under mpirun with 2 and 4 ranks against one process: the CNN and the GPT cut into
// 2 and 4 stages, with and without recomputation, with a replicated stage, and in the planner's own
// plan, train with the same losses as one process training alone (1F1B with a flush is the same
// mathematics; only the summation order differs); a short last mini-batch of an epoch is cut into fewer
// micro-batches; a run resumes bit for bit under its own partition and, within float rounding, under
// another; metrics carry every rank's stage and a pipeline line of predictions and measurements;
// evaluation through the stages is one process's evaluation on the same parameters.
#define BOOST_TEST_MODULE mpi_pipeline
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>

#include "lib/comm/communicator.h"
#include "lib/train/trainer.h"
#include "train/mpi_training.h"

namespace fs = std::filesystem;

namespace {

using mpi_training::MpiFixture;
BOOST_TEST_GLOBAL_FIXTURE(MpiFixture);
using mpi_training::max_relative_difference;
using mpi_training::shared_scratch;

// 1000 samples in steps of 64: the last step of each epoch has 40.
const char* kJob = R"(
[job]
name = "pipeline"
seed = 5
[model]
hidden = [32, 24, 16]
[data]
dataset = "synthetic"
train_samples = 1000
test_samples = 200
features = 12
classes = 5
[optim]
name = "adamw"
lr = 0.01
schedule = "cosine"
warmup_steps = 5
[train]
epochs = 2
global_batch = 64
threads = 1
[checkpoint]
every = 10
keep = 10
[log]
every = 1
progress = "none"
)";

const std::vector<std::string> kCnn = {"model.type=cnn", "model.channels=[4, 8]", "data.dataset=fashion-mnist",
                                       "train.steps=6", "train.global_batch=16"};
const std::vector<std::string> kGpt = {"model.type=gpt", "model.layers=2", "model.width=32", "model.heads=2",
                                       "model.context=32", "model.tied_head=false", "data.dataset=text",
                                       "data.context=32", "train.steps=6", "train.global_batch=16"};

dp::RunResult run(dp::Communicator& comm, const std::string& out, std::vector<std::string> overrides,
                  bool resume = false, int64_t stop = -1) {
  overrides.push_back("launch.ranks=" + std::to_string(comm.size()));
  return mpi_training::train_job(kJob, comm, out, overrides, resume, stop);
}

std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

// The pipelines to compare on `world` ranks: (name, overrides).
std::vector<std::pair<std::string, std::vector<std::string>>> pipelines(int world) {
  const std::string pipe = "parallel.strategy=pipeline";
  if (world == 2)
    return {{"2 stages", {pipe, "parallel.pipeline.stages=\"0-1,2-4\"", "parallel.pipeline.micro_batches=4",
                          "parallel.pipeline.recompute=none"}},
            {"2 stages recomputing", {pipe, "parallel.pipeline.stages=\"0-2,3-4\"", "parallel.pipeline.micro_batches=8",
                                      "parallel.pipeline.recompute=all"}},
            {"one stage replicated", {pipe, "parallel.pipeline.stages=\"0-4x2\"", "parallel.pipeline.micro_batches=2"}}};
  return {{"4 stages", {pipe, "parallel.pipeline.stages=\"0,1,2,3-4\"", "parallel.pipeline.micro_batches=4",
                        "parallel.pipeline.recompute=none"}},
          {"4 stages recomputing", {pipe, "parallel.pipeline.stages=\"0,1,2,3-4\"", "parallel.pipeline.micro_batches=8",
                                    "parallel.pipeline.recompute=all"}},
          {"a replicated stage", {pipe, "parallel.pipeline.stages=\"0-1x2,2-4@3+2\"", "parallel.pipeline.micro_batches=2"}},
          {"the planner's", {pipe}}};
}

}  // namespace

// The GPT has 4 blocks (embedding, 2 layers, head), the MLP 4 layers: their stages are cut at block 3 at most.
std::vector<std::string> for_gpt(std::vector<std::string> o) {
  for (std::string& s : o) {
    if (s == "parallel.pipeline.stages=\"0-1,2-4\"") s = "parallel.pipeline.stages=\"0-1,2-3\"";
    if (s == "parallel.pipeline.stages=\"0-2,3-4\"") s = "parallel.pipeline.stages=\"0-2,3\"";
    if (s == "parallel.pipeline.stages=\"0-4x2\"") s = "parallel.pipeline.stages=\"0-3x2\"";
    if (s == "parallel.pipeline.stages=\"0,1,2,3-4\"") s = "parallel.pipeline.stages=\"0,1,2,3\"";
    if (s == "parallel.pipeline.stages=\"0-1x2,2-4@3+2\"") s = "parallel.pipeline.stages=\"0-1x2,2-3@3+2\"";
  }
  return o;
}

BOOST_AUTO_TEST_CASE(cnn_and_gpt_pipelines_train_as_one_process) {
  auto world = dp::mpi_world();
  auto alone = world->split(world->rank(), 0);
  for (const auto& [model, base] : {std::pair{std::string("cnn"), kCnn}, std::pair{std::string("gpt"), kGpt}}) {
    const std::string dir = shared_scratch(*world, "pipe-" + model);
    const auto solo = run(*alone, dir + "/solo-" + std::to_string(world->rank()), base);
    BOOST_REQUIRE_EQUAL(solo.losses.size(), size_t(6));
    for (const auto& [name, overrides] : pipelines(world->size())) {
      const auto piped = run(*world, dir + "/pipe", with(base, model == "gpt" ? for_gpt(overrides) : overrides));
      BOOST_REQUIRE_EQUAL(piped.losses.size(), size_t(6));
      const double worst = max_relative_difference(piped.losses, solo.losses);
      BOOST_TEST_MESSAGE(model << ", " << name << " on " << world->size() << " ranks: max relative loss difference "
                               << worst);
      BOOST_TEST(worst < 1e-4, model << ", " << name << ": " << worst);
      if (world->rank() == 0)
        BOOST_TEST(std::abs(piped.summary.test_loss - solo.summary.test_loss) < 1e-4 * solo.summary.test_loss,
                   model << ", " << name);
    }
    world->barrier();
    if (world->rank() == 0) fs::remove_all(dir);
  }
}

// Two epochs of the MLP, whose last mini-batch of each epoch (40 samples) is cut like the others, then
// resumed after step 20: under the same stages bit for bit, under other stages as one process would.
BOOST_AUTO_TEST_CASE(short_batches_and_resume_under_another_partition) {
  auto world = dp::mpi_world();
  auto alone = world->split(world->rank(), 0);
  const std::string dir = shared_scratch(*world, "pipe-resume");
  const std::string a = world->size() == 2 ? "\"0-1,2-3\"" : "\"0,1,2,3\"";
  const std::string b = world->size() == 2 ? "\"0,1-3\"" : "\"0-1x2,2-3x2\"";
  const std::vector<std::string> pipe = {"parallel.strategy=pipeline", "parallel.pipeline.micro_batches=8"};
  const auto solo = run(*alone, dir + "/solo-" + std::to_string(world->rank()), {});
  const auto full = run(*world, dir + "/full", with(pipe, {"parallel.pipeline.stages=" + a}));
  BOOST_REQUIRE_EQUAL(full.losses.size(), size_t(2 * 16));
  BOOST_TEST(max_relative_difference(full.losses, solo.losses) < 1e-4);
  BOOST_TEST(full.losses.back() < 0.7 * full.losses.front());  // it learned

  run(*world, dir + "/cut", with(pipe, {"parallel.pipeline.stages=" + a}), false, 25);
  const auto same = run(*world, dir + "/cut", with(pipe, {"parallel.pipeline.stages=" + a}), true);
  const std::vector<double> tail(full.losses.begin() + 20, full.losses.end());
  BOOST_TEST(same.first_step == 21);
  BOOST_TEST(same.losses == tail);  // bit for bit

  run(*world, dir + "/other", with(pipe, {"parallel.pipeline.stages=" + a}), false, 25);
  const auto other = run(*world, dir + "/other", with(pipe, {"parallel.pipeline.stages=" + b}), true);
  BOOST_TEST(other.first_step == 21);
  BOOST_TEST(max_relative_difference(other.losses, tail) < 1e-4);
  // And a pipeline checkpoint is the data strategy's too.
  run(*world, dir + "/data", with(pipe, {"parallel.pipeline.stages=" + a}), false, 25);
  const auto data = run(*world, dir + "/data", {"parallel.strategy=data"}, true);
  BOOST_TEST(max_relative_difference(data.losses, tail) < 1e-4);

  if (world->rank() == 0) {
    // Every rank's train lines name its stage; each pause writes a pipeline line with the plan's
    // predictions beside the measurements, stage by stage.
    std::ifstream metrics(dir + "/full/metrics.jsonl");
    int staged = 0, lines = 0;
    for (std::string line; std::getline(metrics, line);) {
      staged += line.find("\"kind\":\"train\"") != std::string::npos && line.find("\"stage\":") != std::string::npos;
      if (line.find("\"kind\":\"pipeline\"") != std::string::npos) {
        ++lines;
        BOOST_TEST(line.find("\"predicted\":{\"minibatch_ms\":") != std::string::npos, line);
        BOOST_TEST(line.find("\"measured\":{\"compute_ms\":") != std::string::npos, line);
        BOOST_TEST(line.find("\"peak_bytes\":[") != std::string::npos, line);
      }
    }
    BOOST_TEST(staged == 2 * 16 * world->size());
    BOOST_TEST(lines == 5);  // pauses at 10, 16 (the epoch's evaluation), 20, 30 and 32 (the end)
  }
  world->barrier();
  if (world->rank() == 0) fs::remove_all(dir);
}

// Evaluation runs through the stages (forward only, stage to stage, the loss at the last) and gives
// what one process gives on the same parameters: here the initial ones (SGD at lr 1e-30 leaves every
// parameter as it was, but for biases of 1e-30), so the two evaluations see the same model.
BOOST_AUTO_TEST_CASE(evaluation_through_the_pipeline_is_one_process_evaluation) {
  auto world = dp::mpi_world();
  auto alone = world->split(world->rank(), 0);
  const std::vector<std::string> still = {"optim.name=sgd", "optim.lr=1e-30", "optim.schedule=constant",
                                          "optim.warmup_steps=0", "train.steps=1"};
  const std::vector<std::string> kMlp;
  for (const auto& [model, base] : {std::pair{std::string("mlp"), kMlp}, std::pair{std::string("cnn"), kCnn},
                                    std::pair{std::string("gpt"), kGpt}}) {
    const std::string dir = shared_scratch(*world, "pipe-eval-" + model);
    const auto solo = run(*alone, dir + "/solo-" + std::to_string(world->rank()), with(base, still));
    for (const auto& [name, overrides] : pipelines(world->size())) {
      const auto piped =
          run(*world, dir + "/pipe", with(with(base, still), model == "cnn" ? overrides : for_gpt(overrides)));
      if (world->rank() != 0) continue;
      const double loss = std::abs(piped.summary.test_loss - solo.summary.test_loss) / solo.summary.test_loss;
      BOOST_TEST_MESSAGE(model << ", " << name << " on " << world->size() << " ranks: test loss "
                               << piped.summary.test_loss << " (one process " << solo.summary.test_loss
                               << "), relative difference " << loss);
      BOOST_TEST(loss < 1e-6, model << ", " << name << ": " << loss);
      BOOST_TEST(std::abs(piped.summary.test_accuracy - solo.summary.test_accuracy) < 1e-6, model << ", " << name);
    }
    world->barrier();
    if (world->rank() == 0) fs::remove_all(dir);
  }
}
