// The job's device and this rank's place on its host (see device.h).
#include "lib/measure/device.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <thread>

#include <sys/resource.h>

#include "kernels/cpu/ops.h"
#include "lib/core/error.h"

namespace dp {

std::optional<DeviceKind> requested_device(const Job& job) {
  switch (job.train.device) {
    case DeviceRequest::cpu: return DeviceKind::cpu;
    case DeviceRequest::cuda: return DeviceKind::cuda;
    case DeviceRequest::automatic: return std::nullopt;
  }
  return std::nullopt;
}

// The device this run trains on; bf16 exists only on the GPU.
Device choose_device(const Job& job) {
  const Device device = resolve_device(requested_device(job), probe_backends());
  if (job.train.precision == Precision::bf16 && device.kind != DeviceKind::cuda)
    throw JobError("[train] precision", "precision = \"bf16\" needs a GPU; this run trains on " + device.describe(),
                   "use precision = \"fp32\" on the CPU");
  return device;
}

DeviceChoice select_device(const Job& job, Communicator& comm) {
  const Device device = choose_device(job);
  if (device.kind != DeviceKind::cuda) return {device, &cpu_kernels()};
  const int devices = probe_backends().cuda_devices;
  if (comm.local_size() > devices)
    throw JobError("[launch] ranks", fmt::format("{} ranks on host {} share {} GPU(s); GPU training runs one "
                                                 "rank per GPU", comm.local_size(), comm.host(), devices),
                   fmt::format("set ranks to at most {} per host, or device = \"cpu\"", devices));
  use_cuda_device(local_rank(comm), job.train.precision == Precision::bf16);
  return {device, cuda_kernel_table()};
}

// This rank's index among the ranks on its host (which GPU it drives).
int local_rank(Communicator& comm) {
  std::array<char, 256> mine{};
  const std::string host = comm.host();
  std::memcpy(mine.data(), host.data(), std::min(host.size(), mine.size() - 1));
  const auto all = comm.allgather_value(mine);
  int local = 0;
  for (int r = 0; r < comm.rank(); ++r) local += all[size_t(r)] == mine ? 1 : 0;
  return local;
}

double peak_resident_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return double(usage.ru_maxrss) * 1024;  // Linux reports kilobytes
}

int default_threads(const Job& job, const Communicator& comm) {
  if (job.train.threads > 0) return int(job.train.threads);
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, comm.local_size()));
}

bool paced_by_thread_cpu(const Kernels& kernels) { return kernels.host_memory && cpu::compute_threads() == 1; }

}  // namespace dp
