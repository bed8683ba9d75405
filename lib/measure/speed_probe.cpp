// measure_compute_speed: time the job's model on this rank alone, on the device the job trains on (see
// speed_probe.h).
#include "lib/measure/speed_probe.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "kernels/cpu/ops.h"
#include "kernels/kernel_table.h"
#include "lib/core/backend.h"
#include "lib/core/error.h"
#include "lib/balance/emulate.h"
#include "lib/data/dataset.h"
#include "lib/measure/device.h"
#include "models/model.h"

namespace dp {


SpeedProbe measure_compute_speed(const Job& job, Communicator& comm, int steps, int warmup, int64_t batch) {
  cpu::set_compute_threads(default_threads(job, comm));
  const Kernels& kernels = *select_device(job, comm).kernels;
  const DatasetSplits data = load_dataset(job.data, job.job.seed);
  auto model = make_model(job.model, data.train.shape(), job.job.seed, kernels);
  model->set_recompute(job.train.recompute);  // timed as it trains
  const std::vector<int64_t> shares = equal_shares(std::min(job.train.global_batch, data.train.count), comm.size());
  const int64_t timed = batch > 0 ? std::min(batch, shares[size_t(comm.rank())]) : shares[size_t(comm.rank())];
  const std::vector<uint32_t> order = epoch_permutation(data.train.count, job.job.seed, 0);
  SlowdownEmulator emulator(job, comm.rank());
  BatchBuffer buffer;
  comm.barrier();  // every rank has its data: none times its steps while others still read theirs
  std::vector<double> ms;
  // Only the epoch's full steps (its last may be short of the global batch the shares divide).
  const int64_t full_steps = std::max<int64_t>(1, data.train.count / job.train.global_batch);
  for (int i = 0; i < warmup + steps; ++i) {
    const int64_t step = i % full_steps;
    const auto mine = rank_indices(order, job.train.global_batch, step, shares, comm.rank()).first(size_t(timed));
    const auto t0 = std::chrono::steady_clock::now();
    const ComputeTimer timer(paced_by_thread_cpu(kernels));
    model->forward_backward(gather_batch(data.train, mine, buffer), 1.0f, job.train.micro_batch);
    kernels.synchronize();  // GPU work is asynchronous: time the backward, not its launch
    emulator.delay(0, timer.wall_seconds(), timer.cpu_seconds(), timed);  // the speed at the run's start
    if (i >= warmup) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  SpeedProbe p;
  p.cv = robust_cv(ms);
  std::sort(ms.begin(), ms.end());
  p.local_batch = timed;
  p.step_ms = ms.empty() ? 0 : ms[ms.size() / 2];
  p.samples_per_second = p.step_ms > 0 ? double(p.local_batch) / p.step_ms * 1e3 : 0;
  p.threads = cpu::compute_threads();
  p.cuda = !kernels.host_memory;
  return p;
}

double robust_cv(std::vector<double> values) {
  if (values.size() < 3) return 0;
  auto median = [](std::vector<double>& v) {
    std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  const double m = median(values);
  if (!(m > 0)) return 0;
  for (double& v : values) v = std::abs(v - m);
  return 1.4826 * median(values) / m;
}

}  // namespace dp
