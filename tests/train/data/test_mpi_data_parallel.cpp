// Data-parallel equivalence and resume exactness, run under mpirun with 2 and 4 ranks. Each rank also
// trains the same job alone (on a communicator of its own) as the single-process reference.
#define BOOST_TEST_MODULE mpi_data_parallel
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "lib/comm/communicator.h"
#include "lib/train/trainer.h"
#include "train/mpi_training.h"

namespace fs = std::filesystem;

namespace {

using mpi_training::MpiFixture;
BOOST_TEST_GLOBAL_FIXTURE(MpiFixture);
using mpi_training::shared_scratch;

// Global batch 64 over 1000 samples: the last step of each epoch has 40 samples, so with 3+ ranks the
// shares are uneven and change within the epoch.
const char* kJob = R"(
[job]
name = "dp-equivalence"
seed = 7
[model]
hidden = [32, 16]
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
epochs = 3
global_batch = 64
threads = 1
[checkpoint]
every = 10
keep = 10
[log]
every = 1
progress = "none"
)";

using mpi_training::max_relative_difference;

dp::RunResult run(dp::Communicator& comm, const std::string& out, bool resume = false, int64_t stop = -1,
                  const std::vector<std::string>& overrides = {}) {
  return mpi_training::train_job(kJob, comm, out, overrides, resume, stop);
}

}  // namespace

BOOST_AUTO_TEST_CASE(same_global_batch_gives_the_same_losses_on_any_rank_count) {
  auto world = dp::mpi_world();
  const std::string dir = shared_scratch(*world, "equivalence");
  // Reference: this rank alone (each rank writes its own directory).
  auto alone = world->split(world->rank(), 0);
  const auto solo = run(*alone, dir + "/solo-" + std::to_string(world->rank()));
  const auto solo_again = run(*alone, dir + "/solo-" + std::to_string(world->rank()));
  const auto parallel = run(*world, dir + "/world");

  BOOST_TEST(solo.losses.size() == size_t(3 * 16));  // ceil(1000/64) = 16 steps per epoch
  BOOST_TEST(solo.losses == solo_again.losses);        // same job, same seed: identical
  BOOST_REQUIRE(parallel.losses.size() == solo.losses.size());
  // Different rank counts sum the gradients in a different order (float rounding), nothing else.
  const double worst = max_relative_difference(parallel.losses, solo.losses);
  BOOST_TEST_MESSAGE("ranks " << world->size() << ": max relative loss difference to 1 rank " << worst);
  BOOST_TEST(worst < 1e-4);
  BOOST_TEST(solo.losses.back() < 0.6 * solo.losses.front());  // and it did learn
  if (world->rank() == 0) {
    // Every metrics line carries its time since the run started, never decreasing; summary.json has
    // every rank's peak memory (its compute buffers, its resident size).
    std::ifstream metrics(dir + "/world/metrics.jsonl");
    double last_t = 0;
    int lines = 0;
    for (std::string line; std::getline(metrics, line); ++lines) {
      const auto at = line.find(",\"t\":");
      BOOST_TEST_REQUIRE(at != std::string::npos, line);
      const double t = std::stod(line.substr(at + 5));
      BOOST_TEST(t >= last_t);
      last_t = t;
    }
    BOOST_TEST(lines > 3 * 16);
    std::ifstream summary(dir + "/world/summary.json");
    const std::string text((std::istreambuf_iterator<char>(summary)), std::istreambuf_iterator<char>());
    for (int r = 0; r < world->size(); ++r)
      BOOST_TEST(text.find("{\"rank\": " + std::to_string(r) + ", \"allocated_peak_bytes\": ") != std::string::npos);
    const auto at = text.find("\"allocated_peak_bytes\": ");
    BOOST_TEST(std::stod(text.substr(at + 24)) > 4.0 * 800);  // at least the model's parameters
    BOOST_TEST(text.find("\"resident_peak_bytes\": 0}") == std::string::npos);
  }
  world->barrier();
  if (world->rank() == 0) fs::remove_all(dir);
}

// The CNN normalises per sample and the GPT per token, so no statistic depends on how the batch is
// divided: both must also train alike on any rank count. A few steps on the real data sets (both are
// Debian packages the test suite installs); global batch 10 divides unevenly over 4 ranks.
BOOST_AUTO_TEST_CASE(cnn_and_gpt_train_alike_on_any_rank_count) {
  auto world = dp::mpi_world();
  auto alone = world->split(world->rank(), 0);
  const std::vector<std::vector<std::string>> models = {
      {"model.type=cnn", "model.channels=[4, 8]", "data.dataset=fashion-mnist", "train.steps=6",
       "train.global_batch=10"},
      {"model.type=gpt", "model.layers=1", "model.width=32", "model.heads=2", "model.context=32",
       "data.dataset=text", "data.context=32", "train.steps=6", "train.global_batch=10"},
  };
  for (const auto& overrides : models) {
    const std::string dir = shared_scratch(*world, overrides[0].substr(11));
    const auto solo = run(*alone, dir + "/solo-" + std::to_string(world->rank()), false, -1, overrides);
    const auto parallel = run(*world, dir + "/world", false, -1, overrides);
    BOOST_REQUIRE_EQUAL(parallel.losses.size(), size_t(6));
    const double worst = max_relative_difference(parallel.losses, solo.losses);
    BOOST_TEST_MESSAGE(overrides[0] << ", ranks " << world->size() << ": max relative loss difference " << worst);
    BOOST_TEST(worst < 1e-4, overrides[0] << ": " << worst);
    world->barrier();
    if (world->rank() == 0) fs::remove_all(dir);
  }
}

// [train] micro_batch and recompute through the whole run (job keys, strategy "data", MRA, evaluation in
// parts): micro-batches that divide the shares and that do not give the whole shares' losses up to
// rounding, and recomputing every block gives them exactly. (What they save is metered in
// models_test_model_memory_levers and estimate_test_estimate_memory: the process's meter here keeps one
// peak across all the runs of this process.)
BOOST_AUTO_TEST_CASE(memory_levers_train_like_whole_shares) {
  auto world = dp::mpi_world();
  const std::vector<std::vector<std::string>> models = {
      {"model.type=mlp", "train.steps=6"},
      {"model.type=cnn", "model.channels=[4, 8]", "data.dataset=fashion-mnist", "train.steps=4",
       "train.global_batch=12", "data.test_samples=50"},
      {"model.type=gpt", "model.layers=1", "model.width=32", "model.heads=2", "model.context=32",
       "data.dataset=text", "data.context=32", "train.steps=4", "train.global_batch=12"},
  };
  for (const auto& base : models) {
    const std::string dir = shared_scratch(*world, "levers-" + base[0].substr(11));
    auto with = [&](std::vector<std::string> levers) {
      levers.insert(levers.begin(), base.begin(), base.end());
      return levers;
    };
    const auto parts = run(*world, dir + "/parts", false, -1, with({"train.micro_batch=2"}));
    const auto uneven = run(*world, dir + "/uneven", false, -1, with({"train.micro_batch=5"}));
    const auto rebuilt = run(*world, dir + "/rebuilt", false, -1, with({"train.recompute=all"}));
    const auto whole = run(*world, dir + "/whole", false, -1, with({}));
    const double worst = std::max(max_relative_difference(parts.losses, whole.losses),
                                  max_relative_difference(uneven.losses, whole.losses));
    BOOST_TEST_MESSAGE(base[0] << ", ranks " << world->size() << ": micro-batches, max relative loss difference "
                               << worst);
    BOOST_TEST(worst < 1e-5, base[0] << ": " << worst);
    BOOST_TEST(rebuilt.losses == whole.losses, boost::test_tools::per_element());
    if (world->rank() == 0) {
      BOOST_TEST(std::abs(parts.summary.test_loss - whole.summary.test_loss) <= 1e-5 * whole.summary.test_loss);
      BOOST_TEST(rebuilt.summary.test_loss == whole.summary.test_loss);
    }
    world->barrier();
    if (world->rank() == 0) fs::remove_all(dir);
  }
}

BOOST_AUTO_TEST_CASE(resume_continues_exactly) {
  auto world = dp::mpi_world();
  const std::string dir = shared_scratch(*world, "resume");
  const auto full = run(*world, dir + "/full");
  // Stop after 25 steps (checkpoints at 10 and 20 exist), then resume from step 20.
  run(*world, dir + "/cut", false, 25);
  const auto resumed = run(*world, dir + "/cut", true);
  BOOST_TEST(resumed.first_step == 21);
  const std::vector<double> tail(full.losses.begin() + 20, full.losses.end());
  BOOST_TEST(resumed.losses == tail);  // bit for bit
  if (world->rank() == 0) {
    BOOST_TEST(resumed.summary.test_loss == full.summary.test_loss);
    BOOST_TEST(resumed.summary.resumed_from_step == 20);
  }
  world->barrier();
  if (world->rank() == 0) fs::remove_all(dir);
}
