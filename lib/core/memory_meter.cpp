// MemoryMeter (memory_meter.h): atomic counters, a process-wide meter and a per-thread current one.
#include "lib/core/memory_meter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>

namespace dp {
namespace {
thread_local std::shared_ptr<MemoryMeter> current_meter;
thread_local const char* current_use = nullptr;
}  // namespace

void MemoryMeter::add(int64_t bytes) {
  const int64_t now = live_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  const int64_t capacity = capacity_.load(std::memory_order_relaxed);
  if (capacity > 0 && now > capacity && bytes > 0) {
    live_.fetch_sub(bytes, std::memory_order_relaxed);
    refuse(bytes, now - bytes);
  }
  int64_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

CountedBytes::CountedBytes(int64_t bytes) : bytes_(bytes) {
  MemoryMeter::process().add(bytes);
  try {
    if (const std::shared_ptr<MemoryMeter>& meter = MemoryMeter::current()) meter->add(bytes), meter_ = meter;
  } catch (...) {
    MemoryMeter::process().remove(bytes);
    throw;
  }
}

CountedBytes::~CountedBytes() {
  MemoryMeter::process().remove(bytes_);
  if (meter_) meter_->remove(bytes_);
}

void MemoryMeter::set_capacity(int64_t bytes, std::string where) {
  const std::lock_guard lock(text_mutex_);
  capacity_.store(std::max<int64_t>(0, bytes), std::memory_order_relaxed);
  capacity_where_ = std::move(where);
}

void MemoryMeter::set_role(std::string role) {
  const std::lock_guard lock(text_mutex_);
  role_ = std::move(role);
}

void MemoryMeter::refuse(int64_t bytes, int64_t live) const {
  const int64_t capacity = capacity_.load(std::memory_order_relaxed);
  std::string where, role;
  {
    const std::lock_guard lock(text_mutex_);
    where = capacity_where_;
    role = role_;
  }
  auto mb = [](int64_t b) { return fmt::format("{:.1f} MB", double(b) / 1e6); };
  throw OutOfMemory(where,
                    fmt::format("{}out of memory allocating {} for {}: {} free of its {} ({} in use)",
                                role.empty() ? "" : role + ": ", mb(bytes), MemoryUse::current(),
                                mb(std::max<int64_t>(0, capacity - live)), mb(capacity), mb(live)),
                    "give the rank more memory, or hold less: recompute activations, smaller micro-batches, "
                    "more pipeline stages (dptrain estimate --fit and dptrain plan say what fits)");
}

MemoryUse::MemoryUse(const char* what) : previous_(std::exchange(current_use, what)) {}
MemoryUse::~MemoryUse() { current_use = previous_; }
const char* MemoryUse::current() { return current_use ? current_use : "buffers"; }

MemoryMeter& MemoryMeter::process() {
  static MemoryMeter meter;
  return meter;
}

const std::shared_ptr<MemoryMeter>& MemoryMeter::current() { return current_meter; }

MeterScope::MeterScope(std::shared_ptr<MemoryMeter> meter) : previous_(std::exchange(current_meter, std::move(meter))) {}

MeterScope::~MeterScope() { current_meter = std::move(previous_); }

int64_t available_host_bytes() {
  int64_t available = -1;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string key; meminfo >> key;) {
    int64_t kib = 0;
    meminfo >> kib;
    if (key == "MemAvailable:") available = kib * 1024;
    meminfo.ignore(1 << 10, '\n');
  }
  // cgroup v2: the limit of this process's group, less what the group uses.
  std::ifstream self("/proc/self/cgroup");
  std::string line, group;
  while (std::getline(self, line))
    if (line.starts_with("0::")) group = line.substr(3);
  std::ifstream max_file("/sys/fs/cgroup" + group + "/memory.max"), current_file("/sys/fs/cgroup" + group + "/memory.current");
  std::string max_text;
  int64_t current = 0;
  if (max_file >> max_text && max_text != "max" && current_file >> current) {
    const int64_t left = std::max<int64_t>(0, std::strtoll(max_text.c_str(), nullptr, 10) - current);
    available = available < 0 ? left : std::min(available, left);
  }
  return available;
}

}  // namespace dp
