// Strategy "cgp" under mpirun with 2 and 4 ranks: one group is data parallelism (the same losses as
// "data" within float rounding); the deterministic mode reproduces a multi-group run bit for bit and a
// resumed one continues exactly; every epoch's samples are all trained; groups learn.
#define BOOST_TEST_MODULE mpi_cgp
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "lib/comm/communicator.h"
#include "lib/train/trainer.h"
#include "train/mpi_training.h"

namespace fs = std::filesystem;

namespace {

using mpi_training::MpiFixture;
BOOST_TEST_GLOBAL_FIXTURE(MpiFixture);
using mpi_training::shared_scratch;

// 1000 samples in steps of 64: the last step of an epoch has 40, so chunks end at epoch boundaries.
const char* kJob = R"(
[job]
name = "cgp"
seed = 11
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
[parallel]
strategy = "cgp"
[checkpoint]
every = 10
keep = 10
[log]
every = 1
progress = "none"
)";

dp::RunResult run(dp::Communicator& comm, const std::string& out, const std::vector<std::string>& overrides,
                  bool resume = false, int64_t stop = -1) {
  std::vector<std::string> all = overrides;
  all.push_back("launch.ranks=" + std::to_string(comm.size()));
  return mpi_training::train_job(kJob, comm, out, all, resume, stop);
}

// "[0, 0, 1, 1]": two groups of consecutive ranks (one group of one rank each on 2 ranks).
std::string two_groups(int world) {
  std::string g = "parallel.cgp.groups=[";
  for (int r = 0; r < world; ++r) g += (r ? ", " : "") + std::to_string(r * 2 / world);
  return g + "]";
}

// "cluster.emulate.slowdown=[f, f, ...]": every rank slowed by `factor`.
std::string slowdown(int world, int factor) {
  std::string s = "[";
  for (int r = 0; r < world; ++r) s += (r ? ", " : "") + std::to_string(factor);
  return s + "]";
}

std::string one_group(int world) {
  std::string g = "parallel.cgp.groups=[";
  for (int r = 0; r < world; ++r) g += r ? ", 0" : "0";
  return g + "]";
}

}  // namespace

BOOST_AUTO_TEST_CASE(one_group_is_data_parallelism) {
  auto world = dp::mpi_world();
  const std::string dir = shared_scratch(*world, "cgp-one");
  const auto data = run(*world, dir + "/data", {"parallel.strategy=data"});
  const auto cgp = run(*world, dir + "/cgp", {one_group(world->size())});
  if (world->rank() == 0) {
    BOOST_REQUIRE(cgp.losses.size() == data.losses.size());
    const double worst = mpi_training::max_relative_difference(cgp.losses, data.losses);
    BOOST_TEST_MESSAGE("one group against data: max relative loss difference " << worst);
    BOOST_TEST(worst < 1e-5);  // the global model's update adds and subtracts: float rounding only
    BOOST_TEST(std::abs(cgp.summary.test_loss - data.summary.test_loss) < 1e-4 * data.summary.test_loss);
  }
  world->barrier();
  if (world->rank() == 0) fs::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(deterministic_groups_reproduce_and_resume_exactly) {
  auto world = dp::mpi_world();
  const std::string dir = shared_scratch(*world, "cgp-det");
  const std::vector<std::string> det = {two_groups(world->size()), "parallel.cgp.deterministic=true"};
  const auto a = run(*world, dir + "/a", det), b = run(*world, dir + "/b", det);
  run(*world, dir + "/cut", det, false, 25);
  const auto resumed = run(*world, dir + "/cut", det, true);
  if (world->rank() == 0) {
    BOOST_TEST(a.losses.size() == size_t(3 * 16));  // every step of every epoch completed
    BOOST_TEST(a.losses == b.losses);
    BOOST_TEST(a.summary.test_loss == b.summary.test_loss);
    BOOST_TEST(a.losses.back() < 0.6 * a.losses.front());  // and it learned
    BOOST_TEST(resumed.first_step == 21);
    const std::vector<double> tail(a.losses.begin() + 20, a.losses.end());
    BOOST_TEST(resumed.losses == tail);
    BOOST_TEST(resumed.summary.test_loss == a.summary.test_loss);
    // metrics.jsonl: one line per rank and exchange, with its group and staleness; the lines' samples
    // add up to every sample of every epoch, once (the chunks are disjoint ranges of the permutations).
    std::ifstream metrics(dir + "/a/metrics.jsonl");
    int group_lines = 0;
    int64_t samples = 0;
    for (std::string line; std::getline(metrics, line);) {
      group_lines += line.find("\"group\":1") != std::string::npos;
      if (const auto at = line.find("\"local_batch\":"); at != std::string::npos) samples += std::stoll(line.substr(at + 14));
    }
    BOOST_TEST(group_lines > 0);
    BOOST_TEST(samples == 3 * 1000);
  }
  world->barrier();
  if (world->rank() == 0) fs::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(asynchronous_groups_learn_and_regroup) {
  auto world = dp::mpi_world();
  const std::string dir = shared_scratch(*world, "cgp-async");
  const auto r = run(*world, dir + "/async",
                     {"parallel.cgp.solver=exhaustive", "parallel.cgp.regroup_every=8", "parallel.cgp.max_staleness=3",
                      "parallel.cgp.regroup_drift=1000"});  // the cadence only (the speeds here are noisy)
  if (world->rank() == 0) {
    BOOST_TEST(r.losses.size() == size_t(3 * 16));
    BOOST_TEST(r.summary.test_accuracy > 0.5);
    std::ifstream metrics(dir + "/async/metrics.jsonl");
    int decisions = 0, phases = 0;
    for (std::string line; std::getline(metrics, line);) {
      decisions += line.find("\"kind\":\"regroup\"") != std::string::npos;
      // Every phase ends with the model's prediction beside the measurement, group by group.
      if (line.find("\"kind\":\"groups\"") != std::string::npos) {
        ++phases;
        BOOST_TEST(line.find("\"predicted\":{\"step_ms\":") != std::string::npos, line);
        BOOST_TEST(line.find("\"measured\":{\"step_ms\":") != std::string::npos, line);
      }
    }
    BOOST_TEST(decisions == 5);  // at steps 8, 16, 24, 32, 40
    BOOST_TEST(phases == 9);     // ending at the regroupings, checkpoints (10, 20, ...) and the end
  }
  world->barrier();
  if (world->rank() == 0) fs::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(a_drifting_speed_regroups_between_cadence_points) {
  // No cadence; the last rank turns 12x slower at step 12: its speed drops past 70% within 3 of its
  // exchanges and the solver decides on the latest speeds, ending the phase early or at its end. (A
  // wider model and every rank 4x slowed, so that emulated compute, not timer noise, is what is measured;
  // the probed speeds may still be off and a rise be seen first.)
  auto world = dp::mpi_world();
  const std::string dir = shared_scratch(*world, "cgp-drift");
  const int last = world->size() - 1;
  const auto r = run(*world, dir + "/drift",
                     {"parallel.cgp.solver=exhaustive", "parallel.cgp.max_staleness=3", "parallel.cgp.regroup_drift=0.7",
                      "model.hidden=[256, 256]", "cluster.emulate.slowdown=" + slowdown(world->size(), 4),
                      "cluster.emulate.fluctuate_rank=" + std::to_string(last), "cluster.emulate.fluctuate_from=12",
                      "cluster.emulate.fluctuate_to=1000", "cluster.emulate.fluctuate_factor=12"});
  if (world->rank() == 0) {
    BOOST_TEST(r.losses.size() == size_t(3 * 16));
    std::ifstream metrics(dir + "/drift/metrics.jsonl");
    int drifted = 0, first_step = 0;
    std::string decisions;
    for (std::string line; std::getline(metrics, line);)
      if (line.find("\"kind\":\"regroup\"") != std::string::npos && (decisions += line + "\n", true) &&
          line.find("rank " + std::to_string(last) + "'s speed drifted by -") != std::string::npos) {
        const size_t at = line.find("\"step\":");
        if (drifted++ == 0) first_step = std::stoi(line.substr(at + 7));
      }
    BOOST_TEST(drifted >= 1);
    // Steps count samples: fast groups train many while the slow rank makes its 3 exchanges (at least
    // one in each phase, which waits for every group).
    BOOST_TEST(first_step > 12, decisions);
    BOOST_TEST(first_step <= 32, decisions);
  }
  world->barrier();
  if (world->rank() == 0) fs::remove_all(dir);
}
