#define BOOST_TEST_MODULE hostfile
#include <boost/test/unit_test.hpp>

// OpenMPI hostfiles (lib/launch/hostfile.h): names and slots, comments and blank lines, and one clear
// error naming the file and line for anything mpirun would stumble on.

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "lib/core/error.h"
#include "lib/launch/hostfile.h"

namespace {

// The UsageError's where() for parsing `text`, or "" when it parses.
std::string error_where(const std::string& text) {
  try {
    dp::parse_hostfile(text, "hosts.txt");
  } catch (const dp::UsageError& e) {
    BOOST_TEST(e.line().find('\n') == std::string::npos);
    return e.where();
  }
  return "";
}

}  // namespace

BOOST_AUTO_TEST_CASE(names_slots_comments) {
  const auto hosts = dp::parse_hostfile(
      "# the cluster\n"
      "node1 slots=4\n"
      "\n"
      "  node2\tslots=2 max_slots=8   # a comment\n"
      "node3 max-slots=3\r\n"
      "node4 count=1\n",
      "hosts.txt");
  BOOST_REQUIRE(hosts.size() == 4u);
  BOOST_TEST(hosts[0].host == "node1");
  BOOST_TEST(hosts[0].slots == 4);
  BOOST_TEST(hosts[1].host == "node2");
  BOOST_TEST(hosts[1].slots == 2);
  BOOST_TEST(hosts[1].max_slots == 8);
  BOOST_TEST(hosts[2].slots == 0);
  BOOST_TEST(hosts[2].max_slots == 3);
  BOOST_TEST(hosts[3].slots == 1);
}

BOOST_AUTO_TEST_CASE(errors_name_the_line) {
  BOOST_TEST(error_where("node1 slots=4\nnode2 slot=2\n") == "hosts.txt:2");
  BOOST_TEST(error_where("node1 slots=four\n") == "hosts.txt:1");
  BOOST_TEST(error_where("node1 slots=0\n") == "hosts.txt:1");
  BOOST_TEST(error_where("node1 4\n") == "hosts.txt:1");
  BOOST_TEST(error_where("slots=4\n") == "hosts.txt:1");
  BOOST_TEST(error_where("# one\nnode1\n\nnode1 slots=2\n") == "hosts.txt:4");
  BOOST_TEST(error_where("node1 slots=4 max_slots=2\n") == "hosts.txt:1");
  BOOST_TEST(error_where("# nothing here\n\n") == "hosts.txt");
  BOOST_TEST(error_where("node1 slots=2\n").empty());
}

BOOST_AUTO_TEST_CASE(reads_a_file_and_refuses_missing_ones) {
  const auto dir = std::filesystem::temp_directory_path() / "dptrain-test-hostfile";
  std::filesystem::create_directories(dir);
  const auto path = (dir / "hosts").string();
  std::ofstream(path) << "a slots=2\nb slots=2\n";
  BOOST_TEST(dp::read_hostfile(path).size() == 2u);
  BOOST_CHECK_THROW(dp::read_hostfile((dir / "missing").string()), dp::UsageError);
  BOOST_CHECK_THROW(dp::read_hostfile(dir.string()), dp::UsageError);  // a directory
  std::filesystem::remove_all(dir);
}
