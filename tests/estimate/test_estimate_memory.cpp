// The estimate's memory terms (lib/estimate) against what the buffers really hold: each example job's
// model built, trained on a share of a batch and evaluated on rank 0's chunk, with its optimizer's state
// for all or a shard of its parameters, under a memory meter; its peak is the estimate's total exactly,
// with [train] micro_batch and recompute too (and the levers lower it).
#define BOOST_TEST_MODULE estimate_memory
#include <boost/test/unit_test.hpp>

#include <numeric>

#include "lib/core/memory_meter.h"
#include "lib/data/dataset.h"
#include "lib/estimate/estimate.h"
#include "lib/job/job.h"
#include "lib/optim/optimizer.h"
#include "models/model.h"

using namespace dp;

namespace {

Job example(const std::string& name, const std::vector<std::string>& overrides = {}) {
  return load_job(std::string(DPTRAIN_SOURCE_DIR) + "/configs/" + name + ".toml", overrides);
}

// The peak bytes of a rank that trains `n` samples (twice; in micro-batches and recomputing as [train]
// says, like the trainer) and then evaluates `eval` at once.
double metered_peak(const Job& job, int64_t n, int64_t eval, int64_t state_params) {
  const DatasetSplits data = load_dataset(job.data, job.job.seed);
  auto meter = std::make_shared<MemoryMeter>();
  const MeterScope scope(meter);
  auto model = make_model(job.model, data.train.shape(), job.job.seed);
  model->set_recompute(job.train.recompute);
  auto optimizer = make_optimizer(job.optim, state_params);
  BatchBuffer buffer;
  std::vector<uint32_t> idx(size_t(std::max(n, eval)));
  std::iota(idx.begin(), idx.end(), 0u);
  for (int step = 0; step < 2; ++step)
    model->forward_backward(gather_batch(data.train, std::span(idx).first(size_t(n)), buffer), 1.0f,
                            job.train.micro_batch);
  if (eval > 0) model->evaluate(gather_batch(data.test, std::span(idx).first(size_t(eval)), buffer));
  return double(meter->peak());
}

void check(const std::string& config, const std::vector<std::string>& overrides, int64_t n, int64_t eval,
           bool sharded) {
  const Job job = example(config, overrides);
  const estimate::ModelFacts facts = estimate::model_facts(job);
  const int64_t state = sharded ? (facts.parameters + 1) / 2 : facts.parameters;
  const estimate::MemoryTerms m = estimate::data_parallel_memory(job, facts, n, eval, state);
  BOOST_TEST_CONTEXT(config << " n=" << n << " eval=" << eval << " state=" << state) {
    BOOST_TEST(m.params == 4.0 * double(facts.parameters));
    BOOST_TEST(m.total() == metered_peak(job, n, eval, state));
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(mlp_rank_buffers_are_the_estimate) {
  check("quickstart", {}, 64, 0, true);
  check("quickstart", {}, 64, 1000, true);
  check("quickstart", {"optim.name=sgd"}, 7, 0, false);
}

BOOST_AUTO_TEST_CASE(cnn_rank_buffers_are_the_estimate) {
  check("cnn", {"model.channels=[4,8]"}, 16, 0, false);
  check("cnn", {"model.channels=[4,8]"}, 16, 40, true);
}

BOOST_AUTO_TEST_CASE(gpt_rank_buffers_are_the_estimate) {
  check("gpt", {"model.layers=2"}, 4, 0, true);
  check("gpt", {"model.layers=2"}, 4, 64, false);
}

BOOST_AUTO_TEST_CASE(micro_batches_and_recomputation_are_in_the_estimate) {
  for (const char* recompute : {"train.recompute=none", "train.recompute=all"}) {
    check("quickstart", {recompute, "train.micro_batch=5"}, 64, 5, true);
    check("cnn", {"model.channels=[4,8]", recompute, "train.micro_batch=3"}, 16, 3, false);
    check("cnn", {"model.channels=[4,8]", recompute}, 16, 40, true);
    check("gpt", {"model.layers=2", recompute, "train.micro_batch=3"}, 4, 0, true);
    check("gpt", {"model.layers=2", recompute, "train.micro_batch=2"}, 4, 2, false);
    check("gpt", {"model.layers=2", recompute, "train.micro_batch=8"}, 4, 8, false);  // larger than the share
  }
  // Rank 0 evaluates in parts of at most micro_batch samples too; each lever lowers the GPT's total.
  const Job plain = example("gpt", {"model.layers=2"});
  const Job parts = example("gpt", {"model.layers=2", "train.micro_batch=2"});
  const Job rebuilt = example("gpt", {"model.layers=2", "train.recompute=all"});
  const estimate::ModelFacts facts = estimate::model_facts(plain), part_facts = estimate::model_facts(parts);
  BOOST_TEST(facts.eval_chunk == 64);
  BOOST_TEST(part_facts.eval_chunk == 2);
  const double whole = estimate::data_parallel_memory(plain, facts, 16, facts.eval_chunk, 100).total();
  BOOST_TEST(estimate::data_parallel_memory(parts, part_facts, 16, part_facts.eval_chunk, 100).total() < whole);
  BOOST_TEST(estimate::data_parallel_memory(rebuilt, facts, 16, facts.eval_chunk, 100).total() < whole);
}
