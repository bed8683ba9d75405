// Bytes of compute-backend memory (models/buffer.h's buffers: parameters, gradients, optimizer state,
// activations, scratch) as the process allocates them: live and peak, for the whole process and for
// whatever meter is current on the allocating thread. A pipeline stage builds and runs under a meter of
// its own (MeterScope), so its measured peak is what its buffers held, comparable with the planner's
// prediction; the process's meter is what `run` reports as the rank's allocated peak.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace dp {

class MemoryMeter {
 public:
  void add(int64_t bytes);
  void remove(int64_t bytes) { live_.fetch_sub(bytes, std::memory_order_relaxed); }
  int64_t live() const { return live_.load(std::memory_order_relaxed); }
  int64_t peak() const { return peak_.load(std::memory_order_relaxed); }
  // The peak from now on starts at what is live now.
  void reset_peak() { peak_.store(live(), std::memory_order_relaxed); }

  // Every buffer of the process.
  static MemoryMeter& process();
  // The meter allocations on this thread are charged to besides the process's (null: none). Buffers
  // hold on to the meter they were charged to, so a meter lives as long as they do.
  static const std::shared_ptr<MemoryMeter>& current();

 private:
  std::atomic<int64_t> live_{0}, peak_{0};
};

// Makes `meter` the current one on this thread for the scope's lifetime (scopes nest).
class MeterScope {
 public:
  explicit MeterScope(std::shared_ptr<MemoryMeter> meter);
  ~MeterScope();
  MeterScope(const MeterScope&) = delete;
  MeterScope& operator=(const MeterScope&) = delete;

 private:
  std::shared_ptr<MemoryMeter> previous_;
};

// Bytes this process may still allocate on the host: /proc/meminfo's MemAvailable, or less when its
// cgroup (a container, a Slurm job) limits memory; -1 when neither can be read.
int64_t available_host_bytes();

}  // namespace dp
