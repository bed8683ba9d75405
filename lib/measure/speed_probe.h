// This rank's compute speed on a job: samples per second of forward and backward of the job's model on
// its share of an equal division of the global batch (with the job's emulated slowdown as at step 0, if
// any), on the device the job trains on ([train] device: the CUDA kernels on this rank's GPU when it
// resolves to cuda, else the CPU's), for `dptrain profile --compute`, the I-DAT speeds it suggests and
// CGP's first grouping.
#pragma once

#include <cstdint>
#include <vector>

#include "lib/comm/communicator.h"
#include "lib/job/job.h"

namespace dp {

struct SpeedProbe {
  double samples_per_second = 0;  // median over the timed steps
  double step_ms = 0;             // median forward+backward time
  double cv = 0;                  // jitter: robust coefficient of variation of the step times
  int64_t local_batch = 0;
  int threads = 0;
  bool cuda = false;              // timed on the GPU
};

// Collective: every rank calls it (a barrier before timing, no communication while timing). `batch`:
// the samples each rank times (0: its equal share of the global batch).
SpeedProbe measure_compute_speed(const Job& job, Communicator& comm, int steps, int warmup, int64_t batch = 0);

// A robust coefficient of variation of `values`: 1.4826 x the median absolute deviation over the median
// (the standard deviation's estimate for normal values, unmoved by a few outliers); 0 for fewer than 3.
double robust_cv(std::vector<double> values);

}  // namespace dp
