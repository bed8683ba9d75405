// The job's enumerated settings (lib/job/job_enums.h): every value of every enumerated key reads from its
// name, writes back as the same name and survives job_to_toml; every enumerated key refuses an unknown
// name with the same one-line error, listing exactly the enum's names; only train.device ignores case.
#define BOOST_TEST_MODULE job_enums
#include <boost/test/unit_test.hpp>
#include <string>
#include <variant>

#include "job/job_testing.h"
#include "lib/job/job_enums.h"
#include "lib/job/schema.h"

namespace jd = dp::job_detail;
using job_testing::error_of;

namespace {

// The key's value in `job`, by name.
std::string name_in(const jd::KeySpec& key, dp::Job job) { return std::get<jd::EnumRef>(key.field(job)).name(); }

std::string joined(const jd::EnumRef& e) {
  std::string s;
  for (const std::string_view n : e.names) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(names_and_values_convert_both_ways) {
  BOOST_TEST(dp::name_of(dp::StrategyKind::pipeline) == "pipeline");
  BOOST_TEST(dp::name_of(dp::DatasetKind::fashion_mnist) == "fashion-mnist");
  BOOST_TEST(dp::name_of(dp::Recompute::automatic) == "auto");
  BOOST_TEST((dp::enum_named<dp::CgpSolver>("pls") == dp::CgpSolver::pls));
  BOOST_TEST(!dp::enum_named<dp::CgpSolver>("PLS").has_value());  // only the job reader folds train.device
  BOOST_TEST(!dp::enum_named<dp::LrSchedule>("").has_value());
  for (const std::string_view n : dp::names_of<dp::ProgressMode>())
    BOOST_TEST(dp::name_of(dp::enum_named<dp::ProgressMode>(n).value()) == n);
}

BOOST_AUTO_TEST_CASE(every_value_of_every_enumerated_key_reads_and_writes_back) {
  int keys = 0, values = 0;
  for (const jd::KeySpec& key : jd::schema()) {
    dp::Job probe;
    const jd::FieldRef ref = key.field(probe);
    const auto* e = std::get_if<jd::EnumRef>(&ref);
    if (!e) continue;
    ++keys;
    for (const std::string_view name : e->names) {
      BOOST_TEST_CONTEXT(key.dotted() << " = " << name) {
        // launch.launcher = "srun" with no hosts is fine; every other value stands alone.
        const dp::Job job = dp::parse_job("", "x.toml", {key.dotted() + "=" + std::string(name)});
        BOOST_TEST(name_in(key, job) == name);
        const dp::Job back = dp::parse_job(dp::job_to_toml(job), "back.toml");
        BOOST_TEST(name_in(key, back) == name);
        BOOST_TEST(job_testing::same(job, back));
        ++values;
      }
    }
  }
  BOOST_TEST(keys == 15);
  BOOST_TEST(values == 44);
}

BOOST_AUTO_TEST_CASE(every_enumerated_key_refuses_an_unknown_name_listing_its_names) {
  for (const jd::KeySpec& key : jd::schema()) {
    dp::Job probe;
    const jd::FieldRef ref = key.field(probe);
    const auto* e = std::get_if<jd::EnumRef>(&ref);
    if (!e) continue;
    BOOST_TEST_CONTEXT(key.dotted()) {
      const std::string text = "[" + key.table + "]\n" + key.name + " = \"zzzzzzzzzz\"\n";
      const dp::JobError err = error_of(text);
      BOOST_TEST(err.where() == "x.toml:2:" + std::to_string(key.name.size() + 4));
      BOOST_TEST(err.line() == "x.toml:2:" + std::to_string(key.name.size() + 4) + ": error: " + key.dotted() +
                                   ": unknown value 'zzzzzzzzzz' (hint: valid values: " + joined(*e) + ")");
      // The same from the command line, and a value of another type is a type error, not an unknown name.
      BOOST_TEST(error_of("", {key.dotted() + "=zzzzzzzzzz"}).where() == "--set " + key.dotted() + "=zzzzzzzzzz");
      BOOST_TEST(error_of("[" + key.table + "]\n" + key.name + " = 3\n").line().find("expected a string") !=
                 std::string::npos);
    }
  }
}

BOOST_AUTO_TEST_CASE(only_the_device_ignores_case) {
  BOOST_TEST((dp::parse_job("[train]\ndevice = \"CUDA\"\n", "x.toml").train.device == dp::DeviceRequest::cuda));
  BOOST_TEST(error_of("[parallel.comm]\nalgorithm = \"MRA\"\n").line().find("did you mean 'mra'?") !=
             std::string::npos);
  // The folded name is the one the message shows.
  BOOST_TEST(error_of("[train]\ndevice = \"CUDAS\"\n").line().find("unknown value 'cudas'") != std::string::npos);
}
