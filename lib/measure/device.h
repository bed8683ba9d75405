// The device a job trains on and this rank's place on its host: the device [train] device resolves to on
// this machine, that device's kernels (on a GPU, this rank's GPU: chosen here, once, for runs and probes
// alike), compute threads, peak memory, and the machines every rank runs on.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kernels/kernel_table.h"
#include "lib/comm/communicator.h"
#include "lib/core/backend.h"
#include "lib/job/job.h"
#include "lib/machine/machine.h"

namespace dp {

// [train] device as resolve_device takes it: the kind asked for, nullopt for "auto".
std::optional<DeviceKind> requested_device(const Job& job);
// The device this run trains on; bf16 exists only on the GPU. Throws JobError.
Device choose_device(const Job& job);

// The job's device and the kernels that compute on it. On a GPU: this rank's GPU on its host, selected
// for this process (collective: the ranks learn their places on their hosts); more ranks on a host than
// GPUs is a JobError.
struct DeviceChoice {
  Device device;
  const Kernels* kernels = nullptr;
};
DeviceChoice select_device(const Job& job, Communicator& comm);

// This rank's index among the ranks on its host (which GPU it drives). Collective.
int local_rank(Communicator& comm);
// The process's peak resident set size in bytes (getrusage).
double peak_resident_bytes();
// [train] threads, or the host's cores divided among its ranks.
int default_threads(const Job& job, const Communicator& comm);
// Whether the emulator may pace compute on `kernels` by the computing thread's CPU time: CPU kernels on
// one compute thread (a pool of BLAS threads, or a GPU, computes elsewhere).
bool paced_by_thread_cpu(const Kernels& kernels);

// This rank's machine, with the CPU kernels' convolution implementation and threads filled in.
machine::MachineReport this_machine();
// Every rank's machine: one line per kind ("machine: ..." when all ranks agree) and summary.json's array
// of {"ranks": [...], cpu, isa, blas, kernels, threads, convolutions}. Collective.
struct RunMachines {
  std::vector<std::string> lines;
  std::string json;
};
RunMachines gather_machines(Communicator& comm);

}  // namespace dp
