// measure_compute_speed: time the job's model on this rank alone (see speed_probe.h).
#include "lib/train/speed_probe.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "kernels/cpu/ops.h"
#include "lib/balance/emulate.h"
#include "lib/data/dataset.h"
#include "lib/train/run_setup.h"
#include "models/model.h"

namespace dp {

SpeedProbe measure_compute_speed(const Job& job, Communicator& comm, int steps, int warmup) {
  cpu::set_compute_threads(train_detail::default_threads(job, comm));
  const DatasetSplits data = load_dataset(job.data, job.job.seed);
  auto model = make_model(job.model, data.train.shape(), job.job.seed);
  const std::vector<int64_t> shares = equal_shares(std::min(job.train.global_batch, data.train.count), comm.size());
  const std::vector<uint32_t> order = epoch_permutation(data.train.count, job.job.seed, 0);
  SlowdownEmulator emulator(job.cluster.emulate, comm.rank(), job.job.seed);
  BatchBuffer buffer;
  std::vector<double> ms;
  const int64_t epoch_steps = steps_per_epoch(data.train.count, job.train.global_batch);
  for (int i = 0; i < warmup + steps; ++i) {
    const int64_t step = i % epoch_steps;
    const auto mine = rank_indices(order, job.train.global_batch, step, shares, comm.rank());
    const auto t0 = std::chrono::steady_clock::now();
    model->forward_backward(gather_batch(data.train, mine, buffer), 1.0f);
    emulator.delay(i, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (i >= warmup) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  SpeedProbe p;
  p.local_batch = shares[size_t(comm.rank())];
  p.step_ms = ms.empty() ? 0 : ms[ms.size() / 2];
  p.samples_per_second = p.step_ms > 0 ? double(p.local_batch) / p.step_ms * 1e3 : 0;
  p.threads = cpu::compute_threads();
  return p;
}

}  // namespace dp
