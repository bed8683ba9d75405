// The synchronous step (lib/train/step/sync_step.h) in one process, over the thread communicator, with a
// small least-squares model as the work: N ranks train exactly as one (their gradients summed in one
// allreduce), a step whose loss is not finite is undone on every rank under on_nonfinite = "skip" (the
// parameters and optimizer state as before it), and a stop request of one rank ends every rank's loop
// after the same step.
#define BOOST_TEST_MODULE sync_step
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <csignal>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/kernel_table.h"
#include "lib/comm/thread_communicator.h"
#include "lib/job/job.h"
#include "lib/optim/optimizer.h"
#include "lib/train/step/sync_step.h"

namespace {

constexpr int kFeatures = 6;
constexpr int64_t kSamples = 96, kBatch = 24;  // 4 steps per epoch

dp::Job job_with(const std::string& on_nonfinite) {
  return dp::parse_job("[job]\nname = \"sync\"\n[data]\ndataset = \"synthetic\"\n[optim]\nname = \"sgd\"\nlr = 0.05\n"
                       "momentum = 0.9\n[train]\nepochs = 2\nglobal_batch = 24\non_nonfinite = \"" +
                           on_nonfinite + "\"\n",
                       "sync-job", {});
}

// Sample i: x_i from a fixed formula, y_i = w* . x_i with w* = (1, -2, 3, ...).
double feature(int64_t i, int j) { return std::sin(double(i * kFeatures + j) * 0.37); }
double target(int64_t i) {
  double y = 0;
  for (int j = 0; j < kFeatures; ++j) y += (j % 2 ? -1.0 : 1.0) * (j + 1) * feature(i, j);
  return y;
}

// Least squares, 0.5 (w.x - y)^2 per sample: each rank takes its contiguous equal share of the step's
// samples, the gradients are summed over the ranks (one allreduce) and SGD with momentum applies them.
class LeastSquares final : public dp::SyncWork {
 public:
  LeastSquares(dp::Communicator& comm, const dp::Job& job)
      : comm_(comm), w_(kFeatures, 0.0f), opt_(dp::make_optimizer(job.optim, kFeatures, dp::cpu_kernels())) {}

  dp::RankRecord compute(const dp::StepPlan& plan, dp::StepClock::time_point) override {
    const int64_t first = plan.in_epoch * kBatch, per = plan.batch / comm_.size();
    const int64_t begin = first + comm_.rank() * per;
    const int64_t end = comm_.rank() + 1 == comm_.size() ? first + plan.batch : begin + per;
    std::vector<double> grad(kFeatures, 0.0);
    dp::RankRecord r;
    for (int64_t i = begin; i < end; ++i) {
      double residual = -target(i);
      for (int j = 0; j < kFeatures; ++j) residual += double(w_[size_t(j)]) * feature(i, j);
      r.loss_sum += 0.5 * residual * residual;
      for (int j = 0; j < kFeatures; ++j) grad[size_t(j)] += residual * feature(i, j);
    }
    if (plan.index + 1 == poisoned_step) r.loss_sum = std::numeric_limits<double>::quiet_NaN();
    comm_.allreduce_sum(std::span<double>(grad));
    std::vector<float> g(kFeatures);
    for (int j = 0; j < kFeatures; ++j) g[size_t(j)] = float(grad[size_t(j)] / plan.terms);
    opt_->update_range(w_.data(), g.data(), 0, kFeatures, plan.lr, opt_->begin_step());
    r.times.local_batch = end - begin;
    return r;
  }
  void settle() override {}
  std::vector<float> held_params() override { return w_; }
  dp::Optimizer* step_optimizer() override { return opt_.get(); }
  void undo_step(std::span<const float> kept) override { w_.assign(kept.begin(), kept.end()); }

  std::vector<float> w() const { return w_; }
  std::vector<float> state() const { return opt_->state_to_host(); }
  int64_t poisoned_step = -1;  // this step's loss is NaN (its update applied regardless, as after an overflow)

 private:
  dp::Communicator& comm_;
  std::vector<float> w_;
  std::unique_ptr<dp::Optimizer> opt_;
};

const dp::StepCounts kCounts{kSamples / kBatch, 2 * kSamples / kBatch, kSamples, 1};

// What rank 0's sink heard.
struct Heard {
  std::vector<double> losses;
  std::vector<int64_t> steps, skipped;
};
dp::StepSink sink_into(Heard& heard) {
  dp::StepSink sink;
  sink.step = [&heard](const dp::StepRecord& r) {
    heard.losses.push_back(r.loss);
    heard.steps.push_back(r.step);
  };
  sink.skipped = [&heard](int64_t step, double) { heard.skipped.push_back(step); };
  sink.note = [](const std::string&) {};
  sink.record = [](const std::string&) {};
  return sink;
}

// Every rank's parameters after training `steps` steps on n thread ranks, where each rank's loop
// ended, and what every rank's sink heard (rank threads record; the test thread checks).
struct Trained {
  std::vector<std::vector<float>> w;
  std::vector<int64_t> reached;
  std::vector<Heard> heard;
};
Trained train_on(int n, int64_t steps) {
  const dp::Job job = job_with("stop");
  Trained out{std::vector<std::vector<float>>(size_t(n)), std::vector<int64_t>(size_t(n)), std::vector<Heard>(size_t(n))};
  dp::run_thread_ranks(n, [&](dp::Communicator& comm) {
    const size_t me = size_t(comm.rank());
    LeastSquares work(comm, job);
    dp::SyncLoop loop(job, comm, kCounts, -1);
    out.reached[me] = loop.train_until(0, steps, work, sink_into(out.heard[me])).step;
    out.w[me] = work.w();
  });
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(n_ranks_train_as_one) {
  const Trained one = train_on(1, kCounts.total_steps);
  const std::vector<double>& reference = one.heard[0].losses;
  BOOST_REQUIRE(reference.size() == size_t(kCounts.total_steps));
  BOOST_TEST(reference.back() < 0.5 * reference.front());  // it learns
  for (int n : {2, 3, 4}) {
    const Trained many = train_on(n, kCounts.total_steps);
    BOOST_REQUIRE(many.heard[0].losses.size() == reference.size());
    for (size_t s = 0; s < reference.size(); ++s)
      BOOST_TEST(many.heard[0].losses[s] == reference[s], boost::test_tools::tolerance(1e-6));
    for (int r = 0; r < n; ++r) {
      BOOST_TEST(many.reached[size_t(r)] == kCounts.total_steps);
      BOOST_TEST(many.w[size_t(r)] == many.w[0]);  // the same update everywhere
      if (r > 0) BOOST_TEST(many.heard[size_t(r)].steps.empty());  // only rank 0 reports
      for (int j = 0; j < kFeatures; ++j)
        BOOST_TEST(many.w[size_t(r)][size_t(j)] == one.w[0][size_t(j)], boost::test_tools::tolerance(1e-5f));
    }
  }
}

BOOST_AUTO_TEST_CASE(a_skipped_nonfinite_step_is_undone_on_every_rank) {
  const dp::Job job = job_with("skip");
  std::mutex mu;
  int checked = 0;
  dp::run_thread_ranks(3, [&](dp::Communicator& comm) {
    LeastSquares work(comm, job);
    dp::SyncLoop loop(job, comm, kCounts, -1);
    Heard heard;
    const dp::StepSink sink = sink_into(heard);
    (void)loop.train_until(0, 2, work, sink);
    const std::vector<float> w_before = work.w(), state_before = work.state();
    work.poisoned_step = 3;
    const dp::Reached reached = loop.train_until(2, 3, work, sink);
    std::lock_guard lock(mu);
    BOOST_TEST(reached.step == 3);  // the run goes on after the skipped step
    BOOST_TEST(work.w() == w_before);
    BOOST_TEST(work.state() == state_before);
    if (comm.rank() == 0) {
      BOOST_TEST(heard.skipped == std::vector<int64_t>{3});
      BOOST_TEST(heard.steps == (std::vector<int64_t>{1, 2}));
    } else {
      BOOST_TEST(heard.skipped.empty());
    }
    ++checked;
  });
  BOOST_TEST(checked == 3);
}

BOOST_AUTO_TEST_CASE(a_nonfinite_step_stops_every_rank_under_stop) {
  const dp::Job job = job_with("stop");
  std::mutex mu;
  int stopped = 0;
  dp::run_thread_ranks(2, [&](dp::Communicator& comm) {
    LeastSquares work(comm, job);
    work.poisoned_step = 2;
    dp::SyncLoop loop(job, comm, kCounts, -1);
    Heard heard;
    try {
      (void)loop.train_until(0, 4, work, sink_into(heard));
    } catch (const dp::NonFiniteError& e) {
      std::lock_guard lock(mu);
      BOOST_TEST(std::string(e.what()).find("step 2") != std::string::npos, e.what());
      ++stopped;
    }
  });
  BOOST_TEST(stopped == 2);
}

BOOST_AUTO_TEST_CASE(a_stop_request_reaches_the_same_step_on_every_rank) {
  const dp::Job job = job_with("stop");
  std::mutex mu;
  std::vector<dp::Reached> reached(4);
  dp::run_thread_ranks(4, [&](dp::Communicator& comm) {
    LeastSquares work(comm, job);
    dp::SyncLoop loop(job, comm, kCounts, -1);
    int64_t asked = 0;  // rank 2 receives SIGTERM during its fourth step
    loop.stop_request = [&asked, &comm] { return ++asked >= 4 && comm.rank() == 2 ? SIGTERM : 0; };
    Heard heard;
    const dp::Reached r = loop.train_until(0, kCounts.total_steps, work, sink_into(heard));
    std::lock_guard lock(mu);
    reached[size_t(comm.rank())] = r;
  });
  for (const dp::Reached& r : reached) {
    BOOST_TEST(r.step == 4);
    BOOST_TEST(r.stop_signal == SIGTERM);
    BOOST_TEST(r.stop_rank == 2);
  }
}
