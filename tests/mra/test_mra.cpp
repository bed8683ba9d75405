// lib/mra: the bucket plan, and every synchronisation mode training exactly like one process. N ranks run
// as threads (lib/comm's in-process transport), each with its own replica of a small MLP; after some
// AdamW steps on uneven shares of the same global batches, every rank's parameters must equal those of
// a single process trained on the whole batches, within float summation-order noise.
#define BOOST_TEST_MODULE mra
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <ostream>
#include <mutex>

#include "kernels/cpu/ops.h"
#include "lib/comm/thread_communicator.h"
#include "lib/core/rng.h"
#include "lib/mra/mra.h"
#include "lib/optim/optimizer.h"
#include "models/model.h"

using namespace dp;

namespace dp {
std::ostream& operator<<(std::ostream& os, const ParamRange& r) { return os << "[" << r.offset << ", +" << r.count << ")"; }
}  // namespace dp

namespace {

ModelSection mlp_spec() {
  ModelSection s;
  s.type = dp::ModelType::mlp;
  s.hidden = {48, 40};
  return s;
}
const SampleShape kShape{.features = 30, .classes = 6};
constexpr int64_t kGlobal = 13, kSteps = 6;

struct Data {
  std::vector<float> x;
  std::vector<int32_t> y;
};
Data global_batch(int64_t step) {
  Rng rng(derive_seed(17, uint64_t(step), 1));
  Data d;
  for (int64_t i = 0; i < kGlobal * kShape.features; ++i) d.x.push_back(float(rng.uniform() * 2 - 1));
  for (int64_t i = 0; i < kGlobal; ++i) d.y.push_back(int32_t(rng.next() % uint64_t(kShape.classes)));
  return d;
}
// Rank r's contiguous share of the global batch: uneven, and changing with the step.
std::pair<int64_t, int64_t> share(int64_t step, int rank, int ranks) {
  std::vector<int64_t> sizes(size_t(ranks), kGlobal / ranks);
  for (int64_t i = 0; i < kGlobal % ranks; ++i) sizes[size_t((i + step) % ranks)]++;
  int64_t begin = 0;
  for (int r = 0; r < rank; ++r) begin += sizes[size_t(r)];
  return {begin, sizes[size_t(rank)]};
}

OptimSection adamw() {
  OptimSection o;
  o.name = dp::OptimizerKind::adamw;
  o.lr = 0.01;
  o.weight_decay = 0.01;
  return o;
}

// Trains with `options` on `ranks` thread ranks; returns every rank's final parameters. queued: through
// make_queued_gradient_sync on a host CollectiveQueue (the GPU ranks' code, with a thread for a stream).
std::vector<std::vector<float>> train(const GradSyncOptions& options, int ranks, bool queued = false) {
  std::vector<std::vector<float>> result(static_cast<size_t>(ranks));
  std::mutex m;
  run_thread_ranks(ranks, [&](Communicator& comm) {
    auto model = make_model(mlp_spec(), kShape, 3);
    model->set_hook_slice(hook_slice_floats(options));  // with overlap: fc1 in 16 slices of 3 rows
    const auto queue = queued ? make_host_queue(comm) : nullptr;
    auto sync = queued ? make_queued_gradient_sync(options, *queue, comm, model->params(), model->grads(),
                                                   model->hook_ranges())
                       : make_gradient_sync(options, comm, model->params(), model->grads(), model->hook_ranges());
    auto opt = make_optimizer(adamw(), sync->state_count());
    model->on_gradients_ready([&](int64_t offset) { sync->gradients_ready(offset); });
    model->on_parameters_needed([&](int64_t end) { sync->parameters_needed(end); });
    for (int64_t step = 0; step < kSteps; ++step) {
      const Data d = global_batch(step);
      const auto [begin, n] = share(step, comm.rank(), comm.size());
      const int64_t number = opt->begin_step();
      sync->begin_step([&opt, number](float* p, const float* g, int64_t at, int64_t count) {
        opt->update_range(p, g, at, count, 0.01, number);
      });
      model->forward_backward({n, d.x.data() + begin * kShape.features, nullptr, d.y.data() + begin},
                              1.0f / float(kGlobal));
      sync->finish_step();
    }
    sync->settle();  // under overlap_forward the last all-gathers may still run
    std::lock_guard lock(m);
    result[size_t(comm.rank())] = model->params_to_host();
  });
  return result;
}

double max_relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  BOOST_TEST_REQUIRE(!b.empty(), "the reference is empty: nothing to compare");
  BOOST_TEST_REQUIRE(a.size() == b.size(), "vectors of " << a.size() << " and " << b.size() << " values");
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(double(a[i]) - b[i]) / std::max(1e-3, std::abs(double(b[i]))));
  return worst;
}

}  // namespace

BOOST_AUTO_TEST_CASE(buckets_tile_the_buffer_from_the_end) {
  const std::vector<ParamRange> layers{{0, 100}, {100, 0}, {100, 50}, {150, 400}, {550, 10}, {560, 5}};
  // 4-byte floats: first bucket >= 20 floats, later ones >= 200, but the last (the first layers) only as
  // large as the first: layer [0, 100) alone, which cuts the bucket before it short.
  const auto b = plan_buckets(layers, 565, 800, 80);
  const std::vector<ParamRange> want{{150, 415}, {100, 50}, {0, 100}};
  BOOST_TEST(b == want, boost::test_tools::per_element());
  const auto small = plan_buckets(layers, 565, 4, 4);  // every layer its own bucket
  const std::vector<ParamRange> each{{560, 5}, {550, 10}, {150, 400}, {100, 50}, {0, 100}};
  BOOST_TEST(small == each, boost::test_tools::per_element());
  const auto one = plan_buckets(layers, 565, 1 << 30, 1 << 30);
  BOOST_TEST(one.size() == 1u);
  BOOST_TEST(one[0] == (ParamRange{0, 565}));
  BOOST_CHECK_THROW(plan_buckets({{0, 10}, {11, 5}}, 16, 4, 4), InternalError);  // a gap
  BOOST_CHECK_THROW(plan_buckets({{0, 10}}, 12, 4, 4), InternalError);           // short
}

BOOST_AUTO_TEST_CASE(every_mode_trains_like_one_process) {
  cpu::set_compute_threads(1);
  GradSyncOptions plain;
  plain.algorithm = dp::CommAlgorithm::native;
  const std::vector<float> reference = train(plain, 1)[0];

  struct Mode {
    const char* name;
    GradSyncOptions o;
  };
  std::vector<Mode> modes;
  for (const dp::CommAlgorithm a : {dp::CommAlgorithm::native, dp::CommAlgorithm::ring})
    modes.push_back({a == dp::CommAlgorithm::native ? "native" : "ring", {.algorithm = a}});
  for (int overlap : {0, 1, 2})  // none, with backward, with backward and the next forward
    for (bool sharded : {false, true})
      // Small buckets so that several are in flight: 48*30+48 floats in fc1 alone.
      modes.push_back({overlap == 2 ? (sharded ? "mra overlap+forward sharded" : "mra overlap+forward full")
                       : overlap == 1 ? (sharded ? "mra overlap sharded" : "mra overlap full")
                                      : (sharded ? "mra sharded" : "mra full"),
                       {.algorithm = dp::CommAlgorithm::mra, .bucket_bytes = 4000, .first_bucket_bytes = 400,
                        .overlap = overlap > 0, .overlap_forward = overlap == 2, .sharded_update = sharded}});
  // One bucket: nothing to overlap, so no thread (the same arithmetic).
  modes.push_back({"mra overlap+forward, one bucket",
                   {.algorithm = dp::CommAlgorithm::mra, .bucket_bytes = 1 << 30, .first_bucket_bytes = 1 << 30,
                    .overlap = true, .overlap_forward = true}});
  for (const bool queued : {false, true})
    for (const Mode& mode : modes)
      for (int ranks : {1, 2, 3, 4, 5}) {
        BOOST_TEST_CONTEXT(mode.name << (queued ? " (queued)" : "") << ", " << ranks << " ranks") {
          const auto params = train(mode.o, ranks, queued);
          for (int r = 0; r < ranks; ++r) {
            BOOST_TEST(params[size_t(r)] == params[0], "ranks disagree");
            BOOST_TEST(max_relative_difference(params[size_t(r)], reference) < 1e-4);
          }
        }
      }
}

BOOST_AUTO_TEST_CASE(one_bucket_runs_after_backward_without_a_thread) {
  run_thread_ranks(2, [](Communicator& comm) {
    auto model = make_model(mlp_spec(), kShape, 3);
    GradSyncOptions o{.algorithm = dp::CommAlgorithm::mra, .bucket_bytes = 1 << 30, .first_bucket_bytes = 1 << 30};
    auto one = make_gradient_sync(o, comm, model->params(), model->grads(), model->hook_ranges());
    BOOST_TEST(one->describe().find("one bucket: nothing to overlap") != std::string::npos);
    o.bucket_bytes = o.first_bucket_bytes = 400;
    auto many = make_gradient_sync(o, comm, model->params(), model->grads(), model->hook_ranges());
    BOOST_TEST(many->describe().find("overlapping backward") != std::string::npos);
  });
}

BOOST_DATA_TEST_CASE(sharded_state_round_trips_through_the_full_layout, boost::unit_test::data::make({false, true}),
                     queued) {
  run_thread_ranks(3, [queued](Communicator& comm) {
    auto model = make_model(mlp_spec(), kShape, 3);
    const GradSyncOptions o{.algorithm = dp::CommAlgorithm::mra, .bucket_bytes = 4000, .first_bucket_bytes = 400};
    const auto queue = queued ? make_host_queue(comm) : nullptr;
    auto sync = queued ? make_queued_gradient_sync(o, *queue, comm, model->params(), model->grads(),
                                                   model->hook_ranges())
                       : make_gradient_sync(o, comm, model->params(), model->grads(), model->hook_ranges());
    const int64_t total = int64_t(model->params().size());
    BOOST_TEST(sync->state_count() < total);  // a third, give or take the rounding
    std::vector<float> full(size_t(2 * total));
    for (size_t i = 0; i < full.size(); ++i) full[i] = float(i) * 0.5f;
    const auto mine = sync->my_state(full, 2);
    BOOST_TEST(int64_t(mine.size()) == 2 * sync->state_count());
    BOOST_TEST(sync->full_state(mine, 2) == full);
  });
}
