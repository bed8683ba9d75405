// main() of every Boost.Test executable in tests/ (tests/CMakeLists.txt compiles them with
// BOOST_TEST_NO_MAIN and sets SKIP_RETURN_CODE 77). It runs the module as Boost.Test's own main does, and
// when a test case was skipped by a precondition (its environment is missing: a Debian data package, an
// MPI thread level, a library) and nothing failed, exits 77 so that CTest reports the test Skipped, never
// Passed. A failure always wins: the exit code is then Boost.Test's own. Cases a filter left out
// (--run_test, BOOST_TEST_RUN_FILTERS) are not skips.
#include <boost/test/tree/observer.hpp>
#include <boost/test/unit_test.hpp>

#include <iostream>

#include "tests/skip_tally.h"

bool init_unit_test();  // defined by the test file's BOOST_TEST_MODULE

namespace {

namespace ut = boost::unit_test;

constexpr int kSkipped = 77;  // CTest's SKIP_RETURN_CODE for these tests

// Counts into test_skips::tally(), and says which case was skipped and why.
class SkipCounter final : public ut::test_observer {
 public:
  void test_unit_skipped(const ut::test_unit& tu, ut::const_string reason) override {
    if (reason == ut::const_string("disabled")) return;  // left out by a filter: not a skip
    ++test_skips::tally().skipped;
    std::cout << "Skipped " << tu.full_name() << ": " << reason << std::endl;
  }
  void assertion_result(ut::assertion_result ar) override {
    if (ar == ut::AR_FAILED) ++test_skips::tally().failed;
  }
  void exception_caught(const boost::execution_exception&) override { ++test_skips::tally().failed; }
  void test_unit_aborted(const ut::test_unit&) override { ++test_skips::tally().failed; }
  void test_unit_timed_out(const ut::test_unit&) override { ++test_skips::tally().failed; }
};

SkipCounter counter;

bool init_and_count() {
  ut::framework::register_observer(counter);
  return init_unit_test();
}

}  // namespace

namespace test_skips {
Tally& tally() {
  static Tally t;
  return t;
}
}  // namespace test_skips

int main(int argc, char* argv[]) {
  const int code = ut::unit_test_main(&init_and_count, argc, argv);
  const test_skips::Tally& t = test_skips::tally();
  return code == 0 && t.failed == 0 && t.skipped > 0 ? kSkipped : code;
}
