// Bytes of compute-backend memory (models/buffer.h's buffers: parameters, gradients, optimizer state,
// activations, scratch) as the process allocates them: live and peak, for the whole process and for
// whatever meter is current on the allocating thread. A pipeline stage builds and runs under a meter of
// its own (MeterScope), so its measured peak is what its buffers held, comparable with the planner's
// prediction; the process's meter is what `run` reports as the rank's allocated peak.
// A meter can also hold a capacity, emulating a device's memory on the CPU ([cluster.emulate] memory_gb):
// an allocation past it fails before it is made, the way a GPU's does, with an OutOfMemory error naming
// the rank's role, what was being allocated (MemoryUse) and the bytes asked and free.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "lib/core/error.h"

namespace dp {

// An allocation past a meter's capacity. Exit status 1, as any failure while running.
class OutOfMemory : public RuntimeFailure {
  using RuntimeFailure::RuntimeFailure;
};

class MemoryMeter {
 public:
  // Counts `bytes` more; throws OutOfMemory (counting nothing) when they would pass the capacity.
  void add(int64_t bytes);
  void remove(int64_t bytes) { live_.fetch_sub(bytes, std::memory_order_relaxed); }
  int64_t live() const { return live_.load(std::memory_order_relaxed); }
  int64_t peak() const { return peak_.load(std::memory_order_relaxed); }
  // The peak from now on starts at what is live now.
  void reset_peak() { peak_.store(live(), std::memory_order_relaxed); }

  // At most `bytes` live from now on (0: no limit); `where` names where the limit was set (a job key) for
  // the error. Buffers already live count against it.
  void set_capacity(int64_t bytes, std::string where);
  int64_t capacity() const { return capacity_.load(std::memory_order_relaxed); }
  // What the meter's owner is, for the error: "stage 1", "data-parallel rank".
  void set_role(std::string role);

  // Every buffer of the process.
  static MemoryMeter& process();
  // The meter allocations on this thread are charged to besides the process's (null: none). Buffers
  // hold on to the meter they were charged to, so a meter lives as long as they do.
  static const std::shared_ptr<MemoryMeter>& current();

 private:
  [[noreturn]] void refuse(int64_t bytes, int64_t live) const;

  std::atomic<int64_t> live_{0}, peak_{0}, capacity_{0};
  mutable std::mutex text_mutex_;  // guards the two strings below
  std::string capacity_where_, role_;
};

// Names what the buffers allocated on this thread during its lifetime hold ("activations", "optimizer
// state"), for an OutOfMemory error; scopes nest, the innermost names.
class MemoryUse {
 public:
  explicit MemoryUse(const char* what);
  ~MemoryUse();
  MemoryUse(const MemoryUse&) = delete;
  MemoryUse& operator=(const MemoryUse&) = delete;
  static const char* current();  // "buffers" outside every scope

 private:
  const char* previous_;
};

// Sets the process meter's capacity for a scope (the run), and back to none (and no role) after it.
class CapacityScope {
 public:
  CapacityScope(int64_t bytes, std::string where) { MemoryMeter::process().set_capacity(bytes, std::move(where)); }
  ~CapacityScope() {
    MemoryMeter::process().set_capacity(0, {});
    MemoryMeter::process().set_role({});
  }
  CapacityScope(const CapacityScope&) = delete;
  CapacityScope& operator=(const CapacityScope&) = delete;
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

// Host memory that holds model state outside the backend's buffers (a checkpoint's pieces on their way to
// disk), counted on the process's meter and the current one as a buffer of that size would be, for the
// object's lifetime: no copy of model state goes unseen. Throws OutOfMemory as a buffer would.
class CountedBytes {
 public:
  explicit CountedBytes(int64_t bytes);
  ~CountedBytes();
  CountedBytes(const CountedBytes&) = delete;
  CountedBytes& operator=(const CountedBytes&) = delete;

 private:
  int64_t bytes_;
  std::shared_ptr<MemoryMeter> meter_;
};

// Bytes this process may still allocate on the host: /proc/meminfo's MemAvailable, or less when its
// cgroup (a container, a Slurm job) limits memory; -1 when neither can be read.
int64_t available_host_bytes();

}  // namespace dp
