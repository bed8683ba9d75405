// The memory fields of a rank's metrics lines (lib/train/step/rank_gauges.h): the resident size is read, the
// compute buffers' peak comes from the process meter, and without NVML (no NVIDIA driver, as on the CPU
// machines) the GPU fields stay "not measured" with no error. NVML present is not tested here; where it is,
// that case is skipped.
#define BOOST_TEST_MODULE rank_gauges
#include <boost/test/unit_test.hpp>
#include <dlfcn.h>

#include "lib/core/memory_meter.h"
#include "lib/core/nvml_gauge.h"
#include "lib/train/step/rank_gauges.h"

BOOST_AUTO_TEST_CASE(cpu_rank_fills_memory_and_leaves_gpu_fields_unmeasured) {
  dp::MemoryMeter::process().add(1 << 20);
  dp::StepTimes times;
  dp::RankGauges(-1).fill(times);
  BOOST_TEST(times.resident_bytes > 1e6);  // a process holds at least a megabyte
  BOOST_TEST(times.resident_bytes == dp::resident_bytes_now(), boost::test_tools::tolerance(0.05));
  BOOST_TEST(times.allocated_peak_bytes >= double(1 << 20));
  BOOST_TEST(times.gpu_used_bytes == -1.0);
  BOOST_TEST(times.gpu_util_percent == -1.0);
  dp::MemoryMeter::process().remove(1 << 20);
}

// The precondition of the case without NVML (tests/main_with_skips.cpp: skipped where NVML is present).
boost::test_tools::assertion_result nvml_absent(boost::unit_test::test_unit_id) {
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (nvml) dlclose(nvml);
  boost::test_tools::assertion_result absent(nvml == nullptr);
  absent.message() << "libnvidia-ml.so.1 is present here: the case without NVML cannot be checked";
  return absent;
}

BOOST_AUTO_TEST_CASE(without_nvml_the_gauge_is_unavailable_and_reads_nothing,
                     *boost::unit_test::precondition(nvml_absent)) {
  const dp::NvmlGauge gauge(0);
  BOOST_TEST(!gauge.available());
  BOOST_TEST(gauge.read().used_bytes == -1.0);
  dp::StepTimes times;
  dp::RankGauges(0).fill(times);  // a GPU rank on a machine without NVML: no fields, no error
  BOOST_TEST(times.gpu_used_bytes == -1.0);
  BOOST_TEST(times.resident_bytes > 0);
}
