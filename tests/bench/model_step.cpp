// Times one training step's forward+backward of a job's model on the CPU (no communication, no
// optimizer), for side-by-side comparison with PyTorch (tests/bench/torch_models.py).
// Usage: bench_model_step JOB.toml [--batch B] [--steps N] [--warmup W] [--threads T] [--set key=value]...
// Prints one JSON line: model, parameters, batch, threads, ms per step (min, median), samples/s, and the
// machine line (CPU, BLAS kernels, convolutions). Chooses the BLAS kernels as dptrain does.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "kernels/cpu/ops.h"
#include "lib/core/error.h"
#include "lib/data/dataset.h"
#include "lib/machine/machine.h"
#include "lib/measure/device.h"
#include "models/model.h"

int main(int argc, char** argv) {
  try {
    dp::machine::settle_blas_kernels(argv);
    if (argc < 2) throw dp::UsageError("", "usage: bench_model_step JOB.toml [--batch B] [--steps N] [--warmup W] [--threads T] [--set k=v]...");
    std::vector<std::string> overrides;
    int64_t batch = 64, steps = 20, warmup = 3, threads = 1;
    for (int i = 2; i + 1 < argc; i += 2) {
      const std::string flag = argv[i], value = argv[i + 1];
      if (flag == "--set") overrides.push_back(value);
      else if (flag == "--batch") batch = std::stoll(value);
      else if (flag == "--steps") steps = std::stoll(value);
      else if (flag == "--warmup") warmup = std::stoll(value);
      else if (flag == "--threads") threads = std::stoll(value);
      else throw dp::UsageError(flag, "unknown option");
    }
    const dp::Job job = dp::load_job(argv[1], overrides);
    dp::cpu::set_compute_threads(int(threads));
    const dp::DatasetSplits data = dp::load_dataset(job.data, job.job.seed);
    auto model = dp::make_model(job.model, data.train.shape(), job.job.seed);
    std::vector<uint32_t> idx(size_t(std::min<int64_t>(batch, data.train.count)));
    std::iota(idx.begin(), idx.end(), 0u);
    dp::BatchBuffer buffer;
    const dp::Batch b = dp::gather_batch(data.train, idx, buffer);
    const float scale = 1.0f / float(b.n * model->targets_per_sample());
    std::vector<double> ms;
    for (int64_t s = 0; s < warmup + steps; ++s) {
      const auto t0 = std::chrono::steady_clock::now();
      model->forward_backward(b, scale);
      const auto t1 = std::chrono::steady_clock::now();
      if (s >= warmup) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    const double median = ms[ms.size() / 2];
    fmt::print("{{\"runner\":\"dptrain\",\"model\":\"{}\",\"parameters\":{},\"batch\":{},\"threads\":{},"
               "\"ms_min\":{:.3f},\"ms_median\":{:.3f},\"samples_per_sec\":{:.1f},\"machine\":\"{}\"}}\n",
               dp::name_of(job.model.type), model->params().size(), b.n, threads, ms.front(), median,
               double(b.n) * 1000.0 / median, dp::this_machine().line());
    return 0;
  } catch (const dp::Error& e) {
    std::fprintf(stderr, "bench_model_step: %s\n", e.line().c_str());
    return e.exit_code();
  }
}
