// MRA on GPU ranks: lib/mra's queued synchronisation over the NCCL queue (lib/comm/nccl/nccl_queue.cu),
// against the CPU path. NCCL refuses two ranks on one GPU, so on a one-GPU machine this runs one rank:
// it checks the GPU side — NCCL starting and its collectives in place, the queue's stream and events,
// the ordering of reduce-scatter, sharded update and all-gather against the model's kernels (with layers
// announced in slices and the next forward waiting on events) — while the same code's multi-rank logic
// runs on 1-5 ranks over a host queue in tests/mra/test_mra.cpp.
#define BOOST_TEST_MODULE gpu_mra
#include "tests/gpu/gpu_testing.h"

#include "kernels/kernel_table.h"
#include "lib/comm/collective_queue.h"
#include "lib/comm/thread_communicator.h"
#include "lib/mra/mra.h"
#include "lib/optim/optimizer.h"
#include "models/buffer.h"
#include "models/model.h"

using namespace dp;
using namespace dp::gpu_test;

namespace {

ModelSection mlp_spec() {
  ModelSection s;
  s.type = dp::ModelType::mlp;
  s.hidden = {64, 40};
  return s;
}
const SampleShape kShape{.features = 50, .classes = 7};
constexpr int64_t kBatch = 24, kSteps = 6;

OptimSection adamw() {
  OptimSection o;
  o.name = dp::OptimizerKind::adamw;
  o.lr = 0.01;
  o.weight_decay = 0.01;
  return o;
}

// kSteps AdamW steps of an MLP on kernels k, synchronised by `sync` (or none: one process); returns the
// final parameters.
std::vector<float> train(const Kernels& k, const GradSyncOptions* options, CollectiveQueue* queue,
                         Communicator* comm) {
  auto model = make_model(mlp_spec(), kShape, 5, k);
  std::unique_ptr<GradientSync> sync;
  if (options) {
    model->set_hook_slice(hook_slice_floats(*options));
    sync = make_queued_gradient_sync(*options, *queue, *comm, model->params(), model->grads(), model->hook_ranges());
    model->on_gradients_ready([&](int64_t offset) { sync->gradients_ready(offset); });
    model->on_parameters_needed([&](int64_t end) { sync->parameters_needed(end); });
  }
  auto opt = make_optimizer(adamw(), sync ? sync->state_count() : int64_t(model->params().size()), k);
  for (int64_t step = 0; step < kSteps; ++step) {
    auto g = rng(100 + uint64_t(step));
    const std::vector<float> x = uniform(g, size_t(kBatch * kShape.features));
    const std::vector<int32_t> y = integers(g, size_t(kBatch), int32_t(kShape.classes));
    const int64_t number = opt->begin_step();
    auto update = [&opt, number](float* p, const float* gr, int64_t at, int64_t count) {
      opt->update_range(p, gr, at, count, 0.01, number);
    };
    if (sync) sync->begin_step(update);
    model->forward_backward({kBatch, x.data(), nullptr, y.data()}, 1.0f / float(kBatch));
    if (sync)
      sync->finish_step();
    else
      update(model->params().data(), model->grads().data(), 0, int64_t(model->params().size()));
  }
  if (sync) sync->settle();
  return model->params_to_host();
}

}  // namespace

BOOST_AUTO_TEST_CASE(nccl_collectives_leave_one_rank_data_as_it_is) {
  run_thread_ranks(1, [](Communicator& comm) {
    const auto queue = make_nccl_queue(comm);
    BOOST_TEST(queue->describe().rfind("NCCL ", 0) == 0);
    auto g = rng(1);
    for (size_t n : {size_t(1), size_t(7), size_t(1000), size_t(1) << 20}) {
      BOOST_TEST_CONTEXT(n << " floats") {
        const std::vector<float> want = uniform(g, n);
        Buffer<float> data(cuda_kernels(), n);
        data.upload(want);
        queue->follow_compute();
        queue->reduce_scatter(data.span());
        queue->allgather_shards(data.span());
        queue->allreduce(data.span());
        queue->compute_wait(queue->mark());
        queue->synchronize();
        BOOST_TEST(data.to_host() == want);  // one rank: every sum is the data itself, exactly
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(mra_on_the_gpu_trains_like_the_cpu) {
  cuda::set_gemm_math(cuda::GemmMath::fp32);
  const std::vector<float> reference = train(cpu_kernels(), nullptr, nullptr, nullptr);
  struct Mode {
    const char* name;
    GradSyncOptions o;
  };
  // Small buckets, so that several are queued while backward runs: fc1 alone is 64*50+64 floats.
  const std::vector<Mode> modes{
      {"native", {.algorithm = dp::CommAlgorithm::native}},
      {"mra after backward",
       {.algorithm = dp::CommAlgorithm::mra, .bucket_bytes = 4000, .first_bucket_bytes = 800, .overlap = false}},
      {"mra overlap", {.algorithm = dp::CommAlgorithm::mra, .bucket_bytes = 4000, .first_bucket_bytes = 800}},
      {"mra overlap+forward", {.algorithm = dp::CommAlgorithm::mra, .bucket_bytes = 4000, .first_bucket_bytes = 800,
                               .overlap_forward = true}},
      {"mra full update", {.algorithm = dp::CommAlgorithm::mra, .bucket_bytes = 4000, .first_bucket_bytes = 800,
                           .sharded_update = false}},
  };
  for (const Mode& mode : modes) {
    BOOST_TEST_CONTEXT(mode.name) {
      run_thread_ranks(1, [&](Communicator& comm) {
        const auto queue = make_nccl_queue(comm);
        const auto got = train(cuda_kernels(), &mode.o, queue.get(), &comm);
        expect_close("parameters", got, reference, 1e-4);
      });
    }
  }
}
