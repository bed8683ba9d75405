// Where `estimate` and `plan --compare` take step times from: a layer profile (--profile), a device's peak
// rates (--device, or --peak-tflops/--bandwidth), or the job's blocks timed on this machine.
#pragma once

#include <optional>
#include <string>

#include "lib/estimate/estimate.h"
#include "lib/job/job.h"

namespace dp::app {

struct TimingSource {
  std::string profile;                         // a dptrain layer profile of the job's model
  std::optional<estimate::DeviceKind> device;  // with peak rates: a roofline
  bool none = false;                           // memory only: no times
};

// The step times `source` names; without a profile or a device with rates, the job's blocks timed here
// (refused for a model this machine cannot hold, or a GPU job on a machine without one).
estimate::Timing step_timing(const Job& job, const estimate::ModelFacts& facts, const TimingSource& source);

// Whether this machine has a GPU the job would train on.
bool gpu_here(const Job& job);

}  // namespace dp::app
