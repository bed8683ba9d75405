// DeviceBuffer, the context (library versions, error reporting) on a real GPU.
#define BOOST_TEST_MODULE gpu_memory
#include "tests/gpu/gpu_testing.h"

#include <limits>

#include "kernels/cuda/linear.h"
#include "lib/core/error.h"

using namespace dp;
using namespace dp::gpu_test;

BOOST_AUTO_TEST_CASE(upload_download_roundtrip_and_move) {
  auto g = rng(1);
  const std::vector<float> host = uniform(g, 1000);
  DeviceBuffer<float> a(host);
  BOOST_TEST(a.size() == host.size());
  BOOST_TEST(a.download() == host);
  DeviceBuffer<float> b(std::move(a));
  BOOST_TEST(a.data() == nullptr);
  BOOST_TEST(a.size() == 0u);
  BOOST_TEST(b.download() == host);
  DeviceBuffer<float> c;
  c = std::move(b);
  BOOST_TEST(c.download() == host);
  c.zero();
  BOOST_TEST(c.download() == std::vector<float>(host.size(), 0.0f));
  DeviceBuffer<int32_t> empty(0);
  BOOST_TEST(empty.download().empty());
}

BOOST_AUTO_TEST_CASE(size_mismatch_is_an_internal_error) {
  DeviceBuffer<float> a(4);
  std::vector<float> three(3);
  BOOST_CHECK_THROW(a.upload(three), InternalError);
}

BOOST_AUTO_TEST_CASE(allocation_failure_throws_runtime_failure) {
  try {
    DeviceBuffer<float> huge(std::numeric_limits<size_t>::max() / 8);
    BOOST_FAIL("allocating exabytes succeeded");
  } catch (const RuntimeFailure& e) {
    BOOST_TEST_MESSAGE(e.line());
    BOOST_TEST(std::string(e.what()).find("cudaMalloc") != std::string::npos);
  }
  // The failed allocation leaves the device usable.
  DeviceBuffer<float> ok(16);
  ok.zero();
  BOOST_TEST(ok.download().size() == 16u);
}

BOOST_AUTO_TEST_CASE(cublas_errors_name_the_call) {
  DeviceBuffer<float> a(16), b(16), c(16);
  try {
    // lda (1) smaller than the row length (4): cuBLAS rejects the arguments.
    cuda::matmul(false, false, 4, 4, 4, 1.0f, a.data(), 1, b.data(), 4, 0.0f, c.data(), 4);
    cuda::synchronize();
    BOOST_FAIL("cuBLAS accepted an invalid leading dimension");
  } catch (const RuntimeFailure& e) {
    BOOST_TEST_MESSAGE(e.line());
    BOOST_TEST(std::string(e.what()).find("cublasSgemm") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(library_versions_are_reported) {
  const std::string v = cuda::library_versions();
  std::printf("%s\n", v.c_str());
  BOOST_TEST(v.find("cuBLAS") != std::string::npos);
}
