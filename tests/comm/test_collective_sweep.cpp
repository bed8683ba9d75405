// sweep_allreduce on 3 thread ranks: rank 0's table (the header, a row per size and algorithm, the
// ring/native ratio per size, the averages, no wrong elements) or its JSON lines, nothing printed by
// the other ranks, and every rank returning the same count of wrong elements (0: the sums are exact).
#define BOOST_TEST_MODULE collective_sweep
#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "lib/comm/collective_sweep.h"
#include "lib/comm/thread_communicator.h"

namespace {

// The sweep on 3 ranks; rank 0 prints into a temporary file, read back as lines. `wrong`: each rank's result.
std::vector<std::string> sweep_lines(const dp::CollectiveSweep& s, std::vector<int64_t>& wrong) {
  std::FILE* out = std::tmpfile();
  BOOST_REQUIRE(out != nullptr);
  std::mutex mu;
  dp::run_thread_ranks(3, [&](dp::Communicator& comm) {
    const int64_t w = dp::sweep_allreduce(comm, s, comm.rank() == 0 ? out : nullptr);
    std::lock_guard lock(mu);
    wrong.push_back(w);
  });
  std::rewind(out);
  std::vector<std::string> lines;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, out)) lines.emplace_back(buf);
  std::fclose(out);
  return lines;
}

dp::CollectiveSweep small() {
  dp::CollectiveSweep s;
  s.min_bytes = 8;
  s.max_bytes = 2048;  // 8, 64, 512 bytes
  s.factor = 8;
  s.iterations = 2;
  s.warmup = 1;
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_table) {
  dp::CollectiveSweep s = small();
  s.links = "emulated links of 3 ranks";
  std::vector<int64_t> wrong;
  const std::vector<std::string> lines = sweep_lines(s, wrong);
  BOOST_TEST(wrong == std::vector<int64_t>(3, 0), boost::test_tools::per_element());
  // 3 header lines, per size 2 rows and a ratio line, 2 averages, the wrong count.
  BOOST_REQUIRE(lines.size() == 3u + 3 * 3 + 2 + 1);
  BOOST_TEST(lines[0].starts_with("# dptrain profile --collectives: allreduce (sum) of float32 on 3 rank(s), host "));
  BOOST_TEST(lines[0].ends_with(", emulated links of 3 ranks\n"));
  BOOST_TEST(lines[2] == "#       size        count algorithm | out-of-place: time(us) algbw(GB/s) busbw(GB/s) #wrong "
                         "| in-place: time(us) algbw busbw #wrong\n");
  for (int size = 0; size < 3; ++size) {
    const size_t bytes = size_t(8) << (3 * size);
    for (int a = 0; a < 2; ++a) {
      std::istringstream row(lines[size_t(3 + 3 * size + a)]);
      size_t b = 0, count = 0;
      std::string name;
      row >> b >> count >> name;
      BOOST_TEST(b == bytes);
      BOOST_TEST(count == bytes / 4);
      BOOST_TEST(name == (a == 0 ? "native" : "ring"));
    }
    BOOST_TEST(lines[size_t(5 + 3 * size)].find("ring/native busbw ") != std::string::npos);
  }
  BOOST_TEST(lines[12].starts_with("# native: average busbw "));
  BOOST_TEST(lines[12].ends_with(" GB/s over 3 sizes\n"));
  BOOST_TEST(lines[13].starts_with("# ring: average busbw "));
  BOOST_TEST(lines[14] == "# wrong elements: 0\n");
}

BOOST_AUTO_TEST_CASE(json_lines) {
  dp::CollectiveSweep s = small();
  s.json = true;
  s.algorithms = {"ring"};
  std::vector<int64_t> wrong;
  const std::vector<std::string> lines = sweep_lines(s, wrong);
  BOOST_REQUIRE(lines.size() == 3u * 2);  // out of place and in place per size
  BOOST_TEST(lines[0].starts_with(R"({"algorithm": "ring", "in_place": false, "bytes": 8, "count": 2, "ranks": 3, )"));
  BOOST_TEST(lines[1].starts_with(R"({"algorithm": "ring", "in_place": true, "bytes": 8, )"));
  BOOST_TEST(lines[5].find(R"("wrong": 0})") != std::string::npos);
}
