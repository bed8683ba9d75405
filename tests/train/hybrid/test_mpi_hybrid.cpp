// Strategy "cgp-pipeline" (CGP whose groups are pipelines) under mpirun with 2 and 4 ranks, against its
// two reductions: one group is the pipeline (the same losses as strategy "pipeline" within float
// rounding: the global model adds and subtracts the group's update at each pause), and one stage per
// group is CGP (the same losses as strategy "cgp" in its deterministic order, within the summation
// order of a replicated stage). Two groups of two-stage pipelines reproduce bit for bit in the
// deterministic order, train every sample of every epoch once, learn, and resume from their sharded
// checkpoints. A rank the plan leaves out sits out the exchanges.
#define BOOST_TEST_MODULE mpi_hybrid
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

// 1000 samples in steps of 64 (the last of an epoch has 40); the MLP's 4 blocks.
const char* kJob = R"(
[job]
name = "hybrid"
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

dp::RunResult run(dp::Communicator& comm, const std::string& out, std::vector<std::string> overrides,
                  bool resume = false, int64_t stop = -1) {
  overrides.push_back("launch.ranks=" + std::to_string(comm.size()));
  return mpi_training::train_job(kJob, comm, out, overrides, resume, stop);
}

// "parallel.cgp.groups=[...]": `groups` groups of consecutive ranks.
std::string groups_of(int world, int groups) {
  std::string g = "parallel.cgp.groups=[";
  for (int r = 0; r < world; ++r) g += (r ? ", " : "") + std::to_string(r * groups / world);
  return g + "]";
}

const std::string kHybrid = "parallel.strategy=\"cgp-pipeline\"";

// Strategy "pipeline" and one group of "cgp-pipeline" on the same stages, each in its folder under `dir`.
struct PipelineAndHybrid {
  dp::RunResult piped, hybrid;
};
PipelineAndHybrid as_pipeline_and_one_group(dp::Communicator& world, const std::string& dir, const std::string& stages,
                                            int micro_batches) {
  const std::vector<std::string> pipe = {"parallel.pipeline.stages=" + stages,
                                         "parallel.pipeline.micro_batches=" + std::to_string(micro_batches),
                                         "parallel.pipeline.recompute=none"};
  std::vector<std::string> as_pipeline = pipe, as_hybrid = pipe;
  as_pipeline.push_back("parallel.strategy=pipeline");
  as_hybrid.insert(as_hybrid.end(), {kHybrid, groups_of(world.size(), 1)});
  PipelineAndHybrid out;
  out.piped = run(world, dir + "/pipeline", as_pipeline);
  out.hybrid = run(world, dir + "/hybrid", as_hybrid);
  return out;
}

// The samples of every metrics line of a run (its `local_batch`es), and how many lines are group 1's.
struct MetricsCount {
  int64_t samples = 0;
  int group_lines = 0;
};
MetricsCount count_metrics(const std::string& path) {
  std::ifstream metrics(path);
  MetricsCount c;
  for (std::string line; std::getline(metrics, line);) {
    c.group_lines += line.find("\"group\":1") != std::string::npos;
    if (const auto at = line.find("\"local_batch\":"); at != std::string::npos)
      c.samples += std::stoll(line.substr(at + 14));
  }
  return c;
}

}  // namespace

BOOST_AUTO_TEST_CASE(one_group_is_the_pipeline) {
  auto world = dp::mpi_world();
  const std::string dir = shared_scratch(*world, "hybrid-one-group");
  const std::string stages = world->size() == 2 ? "\"0-1,2-3\"" : "\"0,1,2,3\"";
  const auto [piped, hybrid] = as_pipeline_and_one_group(*world, dir, stages, 4);
  if (world->rank() == 0) {
    BOOST_TEST(hybrid.losses.size() == size_t(2 * 16));
    const double worst = max_relative_difference(hybrid.losses, piped.losses);
    BOOST_TEST_MESSAGE("one group against the pipeline on " << world->size() << " ranks: max relative loss difference "
                                                            << worst);
    BOOST_TEST(worst < 1e-5);
    BOOST_TEST(std::abs(hybrid.summary.test_loss - piped.summary.test_loss) < 1e-4 * piped.summary.test_loss);
  }
  world->barrier();
  if (world->rank() == 0) fs::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(one_stage_per_group_is_cgp) {
  auto world = dp::mpi_world();
  const std::string dir = shared_scratch(*world, "hybrid-one-stage");
  const std::vector<std::string> groups = {groups_of(world->size(), 2), "parallel.cgp.deterministic=true"};
  std::vector<std::string> as_cgp = groups, as_hybrid = groups;
  as_cgp.push_back("parallel.strategy=cgp");
  as_hybrid.insert(as_hybrid.end(), {kHybrid, "parallel.pipeline.stages=\"0-3x" + std::to_string(world->size() / 2) + "\"",
                                     "parallel.pipeline.micro_batches=1"});
  const auto cgp = run(*world, dir + "/cgp", as_cgp);
  const auto hybrid = run(*world, dir + "/hybrid", as_hybrid);
  if (world->rank() == 0) {
    BOOST_TEST(hybrid.losses.size() == size_t(2 * 16));
    const double worst = max_relative_difference(hybrid.losses, cgp.losses);
    BOOST_TEST_MESSAGE("one stage per group against CGP on " << world->size() << " ranks: max relative loss difference "
                                                             << worst);
    BOOST_TEST(worst < 1e-4);
    BOOST_TEST(std::abs(hybrid.summary.test_loss - cgp.summary.test_loss) < 1e-4 * cgp.summary.test_loss);
  }
  world->barrier();
  if (world->rank() == 0) fs::remove_all(dir);
}

// Two groups of two-stage pipelines (4 ranks; on 2, two groups of one stage).
BOOST_AUTO_TEST_CASE(groups_of_pipelines_reproduce_learn_and_resume) {
  auto world = dp::mpi_world();
  const std::string dir = shared_scratch(*world, "hybrid-det");
  const std::string stages = world->size() == 4 ? "\"0-1,2-3\"" : "\"0-3\"";
  const std::vector<std::string> det = {kHybrid, groups_of(world->size(), 2), "parallel.cgp.deterministic=true",
                                        "parallel.pipeline.stages=" + stages, "parallel.pipeline.micro_batches=2"};
  const auto a = run(*world, dir + "/a", det), b = run(*world, dir + "/b", det);
  run(*world, dir + "/cut", det, false, 15);
  const auto resumed = run(*world, dir + "/cut", det, true);
  if (world->rank() == 0) {
    BOOST_TEST(a.losses.size() == size_t(2 * 16));  // every step of every epoch completed
    BOOST_TEST(a.losses == b.losses);
    BOOST_TEST(a.summary.test_loss == b.summary.test_loss);
    BOOST_TEST(a.losses.back() < 0.7 * a.losses.front());  // and it learned
    BOOST_TEST(resumed.first_step == 11);  // from the checkpoint of step 10
    BOOST_TEST(resumed.losses.size() == size_t(2 * 16 - 10));
    // Group 1 resumes with group 0's optimizer state: close to the uninterrupted run, not equal.
    BOOST_TEST(std::abs(resumed.summary.test_loss - a.summary.test_loss) < 0.05 * a.summary.test_loss);
    // metrics.jsonl: the leading stage's members' lines carry every sample of every epoch, once.
    const MetricsCount counted = count_metrics(dir + "/a/metrics.jsonl");
    BOOST_TEST(counted.group_lines > 0);
    BOOST_TEST(counted.samples == 2 * 1000);
  }
  world->barrier();
  if (world->rank() == 0) fs::remove_all(dir);
}

// A plan may leave a rank out (the planner leaves a device idle that would slow its stage): that rank
// takes no part in its group's exchanges (before, the group waited for it at every exchange: a
// deadlock). One group that leaves ranks out is still the pipeline with the same stages; on 4 ranks,
// two groups that each leave their second rank out still train every sample once and learn.
BOOST_AUTO_TEST_CASE(a_rank_the_plan_leaves_out_sits_out_the_exchanges) {
  auto world = dp::mpi_world();
  const std::string dir = shared_scratch(*world, "hybrid-idle");
  const std::string stages = world->size() == 2 ? "\"0-3@0\"" : "\"0-1@0,2-3@1\"";
  const auto [piped, hybrid] = as_pipeline_and_one_group(*world, dir, stages, 2);
  if (world->rank() == 0) {
    BOOST_TEST(hybrid.losses.size() == size_t(2 * 16));
    BOOST_TEST(max_relative_difference(hybrid.losses, piped.losses) < 1e-5);
  }
  if (world->size() == 4) {
    const std::vector<std::string> two = {kHybrid, groups_of(4, 2), "parallel.pipeline.stages=\"0-3@0\"",
                                          "parallel.pipeline.micro_batches=2", "parallel.cgp.deterministic=true"};
    const auto idle = run(*world, dir + "/two", two);
    if (world->rank() == 0) {
      BOOST_TEST(idle.losses.size() == size_t(2 * 16));
      BOOST_TEST(idle.losses.back() < 0.7 * idle.losses.front());
      BOOST_TEST(count_metrics(dir + "/two/metrics.jsonl").samples == 2 * 1000);
    }
  }
  world->barrier();
  if (world->rank() == 0) fs::remove_all(dir);
}
