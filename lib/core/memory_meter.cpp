// MemoryMeter (memory_meter.h): atomic counters, a process-wide meter and a per-thread current one.
#include "lib/core/memory_meter.h"

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

}  // namespace dp
