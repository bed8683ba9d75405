// MemoryMeter (memory_meter.h): atomic counters, a process-wide meter and a per-thread current one.
#include "lib/core/memory_meter.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>

namespace dp {
namespace {
thread_local std::shared_ptr<MemoryMeter> current_meter;
}  // namespace

void MemoryMeter::add(int64_t bytes) {
  const int64_t now = live_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  int64_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

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
