// step_timing (timing.h): a layer profile read and checked against the job's model, a roofline from a
// device's peak rates, or the job's blocks timed here.
#include "apps/dptrain/timing.h"

#include <fmt/format.h>

#include <algorithm>

#include "lib/core/error.h"
#include "lib/core/memory_meter.h"
#include "lib/measure/measure.h"
#include "lib/pipeline/profile.h"

namespace dp::app {

// Whether this machine has a GPU the job would train on.
bool gpu_here(const Job& job) {
  try {
    return choose_device(job).kind == DeviceKind::cuda;
  } catch (const Error&) {
    return false;
  }
}

estimate::Timing step_timing(const Job& job, const estimate::ModelFacts& facts, const TimingSource& source) {
  const std::optional<estimate::DeviceKind>& device = source.device;
  estimate::Timing t;
  const int64_t share = std::max<int64_t>(1, job.train.global_batch / std::max<int64_t>(1, job.launch.ranks));
  // A pipeline's stages (a CGP group's too) are timed at the micro-batch the run times its blocks at.
  const bool staged = job.parallel.strategy == StrategyKind::pipeline || job.parallel.strategy == StrategyKind::cgp_pipeline;
  const int64_t micro = staged ? profile_micro_batch(job) : share;
  if (source.none) return t;
  if (!source.profile.empty()) {
    if (!pipeline::is_block_profile(source.profile))
      throw UsageError("--profile", source.profile + " is not a dptrain layer profile",
                       "write one with 'dptrain profile --layers JOB --out FILE' (PipeDream's graphs have no "
                       "update or fixed times)");
    t.profile = pipeline::read_block_profile(source.profile);
    if (t.profile->model != facts.describe)
      throw ProfileError(source.profile, "a profile of " + t.profile->model + ", not of " + facts.describe,
                         "profile this job's model: dptrain profile --layers JOB --out FILE");
    t.basis = "layer profile " + source.profile + " (" + t.profile->timed_on() + ")";
  } else if (device && (device->peak_tflops > 0 || device->memory_gbps > 0)) {
    t.profile = estimate::roofline_profile(facts, *device, job.train.precision == Precision::bf16, micro);
    t.basis = device->name + "'s peak rates (a lower bound)";
  } else {
    if (job.train.device == DeviceRequest::cuda && !gpu_here(job))
      throw UsageError("--profile", "the job trains on GPUs and this machine has none to time its blocks on",
                       "give --profile FILE (profile --layers on a GPU), --device NAME (peak rates) or --no-timing");
    // Timing the blocks here builds the model: only one this machine can hold (its parameters, their
    // gradients and two optimizer slots, as `run` checks).
    const int64_t available = available_host_bytes();
    constexpr int64_t kBytesPerParameter = 16;
    if (available > 0 && facts.parameters > available / kBytesPerParameter)
      throw UsageError("--profile",
                       fmt::format("the model's {} parameters need at least {:.1f} GiB to time its blocks here, more "
                                   "than the {:.1f} GiB this machine has available", facts.parameters,
                                   double(facts.parameters) * kBytesPerParameter / double(1 << 30),
                                   double(available) / double(1 << 30)),
                       "give --device NAME (times from its peak rates), --profile FILE (profile --layers --device "
                       "NAME --out FILE) or --no-timing");
    t.profile = measure_block_profile(job, micro, 5, 2);
    t.basis = "the blocks timed here (" + t.profile->timed_on() + ", " + std::to_string(micro) + " samples)";
  }
  return t;
}

}  // namespace dp::app
