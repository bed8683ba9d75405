// This rank's compute speed on a job: samples per second of forward and backward of the job's model on
// its share of an equal division of the global batch (with the job's emulated slowdown, if any), on the
// device the job trains on ([train] device: the CUDA kernels on this rank's GPU when it resolves to cuda,
// else the CPU's), for `dptrain profile --compute` and the I-DAT speeds it suggests.
#pragma once

#include <cstdint>

#include "lib/comm/communicator.h"
#include "lib/job/job.h"

namespace dp {

struct SpeedProbe {
  double samples_per_second = 0;  // median over the timed steps
  double step_ms = 0;             // median forward+backward time
  int64_t local_batch = 0;
  int threads = 0;
  bool cuda = false;              // timed on the GPU
};

// Collective only in that every rank calls it (no communication while timing).
SpeedProbe measure_compute_speed(const Job& job, Communicator& comm, int steps, int warmup);

}  // namespace dp
