// The memory meters (lib/core/memory_meter.h) as buffers (models/buffer.h) charge them: the process's
// and the thread's current meter count live and peak bytes, a freed or moved buffer uncharges the meter
// it was charged to (even after its scope ended), and scopes nest.
#define BOOST_TEST_MODULE memory_meter
#include <boost/test/unit_test.hpp>

#include <memory>

#include "kernels/kernel_table.h"
#include "lib/core/memory_meter.h"
#include "models/buffer.h"

using dp::Buffer;
using dp::MemoryMeter;
using dp::MeterScope;

BOOST_AUTO_TEST_CASE(a_scope_charges_its_meter_and_the_process) {
  const auto& k = dp::cpu_kernels();
  auto meter = std::make_shared<MemoryMeter>();
  const int64_t process_before = MemoryMeter::process().live();
  {
    Buffer<float> outside(k, 10);  // no scope: the process only
    BOOST_TEST(meter->live() == 0);
    std::unique_ptr<Buffer<float>> kept;
    {
      MeterScope scope(meter);
      Buffer<float> a(k, 100);
      kept = std::make_unique<Buffer<float>>(k, 50);
      BOOST_TEST(meter->live() == 600);
      a.grow(300);  // freed, then 1200 bytes: the peak sees 200 + 1200
      BOOST_TEST(meter->live() == 1400);
      BOOST_TEST(meter->peak() == 1400);
      BOOST_TEST(MemoryMeter::process().live() - process_before == 1440);
    }
    BOOST_TEST(meter->live() == 200);  // `kept` outlives the scope and stays charged
    BOOST_TEST(meter->peak() == 1400);
    Buffer<float> moved = std::move(*kept);
    kept.reset();
    BOOST_TEST(meter->live() == 200);  // a move keeps the charge with the memory
  }
  BOOST_TEST(meter->live() == 0);
  BOOST_TEST(MemoryMeter::process().live() == process_before);
  meter->reset_peak();
  BOOST_TEST(meter->peak() == 0);
}

BOOST_AUTO_TEST_CASE(scopes_nest_and_a_meter_outlives_its_owner) {
  const auto& k = dp::cpu_kernels();
  auto outer = std::make_shared<MemoryMeter>(), inner = std::make_shared<MemoryMeter>();
  std::unique_ptr<Buffer<int32_t>> b;
  {
    MeterScope a(outer);
    {
      MeterScope c(inner);
      b = std::make_unique<Buffer<int32_t>>(k, 4);
    }
    Buffer<int32_t> d(k, 8);
    BOOST_TEST(outer->live() == 32);
    BOOST_TEST(inner->live() == 16);
  }
  BOOST_TEST(MemoryMeter::current() == nullptr);
  const std::weak_ptr<MemoryMeter> gone = inner;
  inner.reset();  // the buffer still holds it
  BOOST_TEST(!gone.expired());
  b.reset();
  BOOST_TEST(gone.expired());
}
