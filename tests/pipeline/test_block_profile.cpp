// dptrain's layer profile files (lib/pipeline/profile.h) refused when they are bad, each error naming
// FILE:LINE:COL and the field.
#define BOOST_TEST_MODULE block_profile
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>

#include "lib/core/error.h"
#include "lib/pipeline/profile.h"

using namespace dp;
namespace fs = std::filesystem;

namespace {

const std::string kGood = R"([profile]
model = "m"
micro_batch = 2
input_bytes = 16

[[block]]
name = "a"
forward_ms = 1
backward_ms = 2
output_bytes = 8
saved_bytes = 16
work_bytes = 0
param_bytes = 40
)";

// "LINE:COL: WHAT" of the error a profile with `text` gives, or "no error".
std::string error_of(const std::string& text) {
  const fs::path path = fs::temp_directory_path() / "dptrain-test-block-profile.toml";
  std::ofstream(path) << text;
  try {
    pipeline::read_block_profile(path.string());
  } catch (const ProfileError& e) {
    fs::remove(path);
    return e.where().substr(std::min(e.where().size(), path.string().size() + 1)) + ": " + e.message();
  }
  fs::remove(path);
  return "no error";
}

std::string replaced(const std::string& from, const std::string& to) {
  std::string s = kGood;
  s.replace(s.find(from), from.size(), to);
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_good_profile_reads) { BOOST_TEST(error_of(kGood) == "no error"); }

BOOST_AUTO_TEST_CASE(bad_profiles_name_the_line_and_field) {
  BOOST_TEST(error_of(replaced("backward_ms = 2", "backward_ms = -2")) == "9:15: block a: backward_ms = -2 is negative");
  BOOST_TEST(error_of(replaced("work_bytes = 0", "work_bytes = \"x\"")) == "12:14: block a: work_bytes is not a number");
  BOOST_TEST(error_of(replaced("param_bytes = 40\n", "")) == "6:1: block a has no param_bytes");
  BOOST_TEST(error_of(replaced("micro_batch = 2", "micro_batch = 0")).find("3:15: [profile]: micro_batch = 0") == 0);
  BOOST_TEST(error_of(replaced("[[block]]", "[[block]")).find("6:") == 0);  // not TOML
  BOOST_TEST(error_of("[profile]\nmicro_batch = 1\ninput_bytes = 0\n") == ": no [[block]] tables");
  BOOST_TEST(error_of(kGood + "shares_weights_with = 3\n").find("14:23: block a: shares_weights_with = 3 is not") == 0);
  BOOST_TEST(error_of(replaced("input_bytes = 16", "input_bytes = 16\ntimed_resting = 0.5")) ==
             "5:17: [profile]: timed_resting = 0.5 is below 1");
  BOOST_TEST(error_of(replaced("input_bytes = 16", "input_bytes = 16\ntimed_resting = 4\nrest_scale = 1.2")) ==
             "no error");
  BOOST_TEST(error_of(replaced("input_bytes = 16", "input_bytes = 16\nrest_scale = 0.9")) ==
             "5:14: [profile]: rest_scale = 0.9 is below 1");
}

BOOST_AUTO_TEST_CASE(a_steps_extra_time_is_read_checked_and_written) {
  const std::string extra = replaced("input_bytes = 16", "input_bytes = 16\nstep_extra_ms = 0.5\nstep_extra_fixed_ms = 0.1");
  BOOST_TEST(error_of(extra) == "no error");
  BOOST_TEST(error_of(replaced("input_bytes = 16", "input_bytes = 16\nstep_extra_ms = 0.5\nstep_extra_fixed_ms = 0.7")) ==
             "6:23: [profile]: step_extra_fixed_ms = 0.7 is more than step_extra_ms, 0.5");
  BOOST_TEST(error_of(replaced("input_bytes = 16", "input_bytes = 16\nstep_extra_ms = -1")) ==
             "5:17: [profile]: step_extra_ms = -1 is negative");
  const fs::path path = fs::temp_directory_path() / "dptrain-test-block-profile-extra.toml";
  std::ofstream(path) << extra;
  pipeline::BlockProfile p = pipeline::read_block_profile(path.string());
  BOOST_TEST(p.step_extra_ms == 0.5);
  BOOST_TEST(p.step_extra_fixed_ms == 0.1);
  pipeline::write_block_profile(path.string(), p);
  const pipeline::BlockProfile again = pipeline::read_block_profile(path.string());
  fs::remove(path);
  BOOST_TEST(again.step_extra_ms == 0.5);
  BOOST_TEST(again.step_extra_fixed_ms == 0.1);
}
