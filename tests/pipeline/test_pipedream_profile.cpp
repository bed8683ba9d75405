// lib/pipeline's reader of PipeDream's graph.txt against the published profiles in ../shared/profiles
// (AlexNet: a chain but for the size op of its flatten; ResNet-18 and GNMT: graphs linearised, with
// skips crossing boundaries and tuple sizes summed) and against bad files, each refused with FILE:LINE.
#define BOOST_TEST_MODULE pipedream_profile
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "lib/core/error.h"
#include "lib/pipeline/profile.h"

using namespace dp;
using namespace dp::pipeline;
namespace tt = boost::test_tools;
namespace fs = std::filesystem;

namespace {

std::string published(const std::string& name) {
  return std::string(DPTRAIN_SOURCE_DIR) + "/../shared/profiles/pipedream/" + name + "_graph.txt";
}

double sum(const LayerProfile& p, double ProfiledBlock::*field) {
  double s = 0;
  for (const ProfiledBlock& b : p.blocks) s += b.*field;
  return s;
}

// The error a profile with `text` gives: "WHERE: WHAT".
std::string error_of(const std::string& text) {
  const fs::path path = fs::temp_directory_path() / "dptrain-test-graph.txt";
  std::ofstream(path) << text;
  try {
    read_pipedream_graph(path.string());
  } catch (const ProfileError& e) {
    fs::remove(path);
    return e.where().substr(path.string().size()) + ": " + e.message();
  }
  fs::remove(path);
  return "no error";
}

const std::string kGood = "node1 -- Input -- forward_compute_time=5.0, backward_compute_time=0.0, activation_size=8.0, parameter_size=0.0\n";

}  // namespace

BOOST_AUTO_TEST_CASE(alexnet_is_a_chain_but_for_its_size_op) {
  const LayerProfile p = read_pipedream_graph(published("alexnet"));
  BOOST_TEST_REQUIRE(p.blocks.size() == 22u);  // 23 nodes less the input
  BOOST_TEST(p.blocks.front().description == "Conv2d(3, 64, kernel_size=(11, 11), stride=(4, 4), padding=(2, 2))");
  BOOST_TEST(p.blocks.front().forward_ms == 22.316);
  BOOST_TEST(p.blocks.front().output_bytes == 198246400.0);
  BOOST_TEST(p.blocks.front().param_bytes == 93184.0);
  // The input node is the data: 256 images of 3 x 224 x 224 floats (the profile's minibatch).
  BOOST_TEST(p.input_bytes == 256.0 * 3 * 224 * 224 * 4);
  // Every node's time but the input's (635.902 ms of data loading).
  BOOST_TEST(sum(p, &ProfiledBlock::forward_ms) == 680.703 - 635.902, tt::tolerance(1e-9));
  BOOST_TEST(sum(p, &ProfiledBlock::backward_ms) == 40.52, tt::tolerance(1e-9));
  // The flatten reads the pooled tensor and its size (node14 -> node15 = Size(0) -> node16 = View):
  // after Size(0) both cross; every other boundary carries its block's output alone.
  BOOST_TEST(!p.chain);
  BOOST_TEST_REQUIRE(p.boundary_bytes.size() == p.blocks.size() - 1);
  for (size_t b = 0; b < p.boundary_bytes.size(); ++b) {
    const bool size_op = p.blocks[b].description == "Size(0)";
    BOOST_TEST(p.boundary_bytes[b] == p.blocks[b].output_bytes + (size_op ? 9437184.0 : 0.0), p.blocks[b].id);
  }
}

BOOST_AUTO_TEST_CASE(resnet_skips_cross_boundaries) {
  const LayerProfile p = read_pipedream_graph(published("resnet18"));
  BOOST_TEST(!p.chain);
  BOOST_TEST(p.blocks.size() == 70u);
  BOOST_TEST(sum(p, &ProfiledBlock::forward_ms) == 581.071 - 473.625, tt::tolerance(1e-9));
  // Inside a residual unit the block input travels beside the branch: more than one output crosses.
  int wider = 0;
  for (size_t b = 0; b < p.boundary_bytes.size(); ++b) {
    BOOST_TEST(p.boundary_bytes[b] >= p.blocks[b].output_bytes);  // every block but the last is read later
    wider += p.boundary_bytes[b] > p.blocks[b].output_bytes;
  }
  BOOST_TEST(wider >= 8);  // eight basic blocks
}

BOOST_AUTO_TEST_CASE(gnmt_sums_tuple_sizes_and_keeps_its_inputs_travelling) {
  const LayerProfile p = read_pipedream_graph(published("gnmt"));
  BOOST_TEST(!p.chain);
  BOOST_TEST(p.blocks.size() == 45u);  // 48 nodes less 3 inputs
  std::map<std::string, const ProfiledBlock*> by_id;
  for (const ProfiledBlock& b : p.blocks) by_id[b.id] = &b;
  BOOST_TEST_REQUIRE(by_id.count("node7") == 1u);
  BOOST_TEST(by_id["node7"]->output_bytes == 6291456.0 + 131072.0 + 131072.0);
  BOOST_TEST(by_id["node7"]->description == "LSTM(2048, 1024)");
  BOOST_TEST(sum(p, &ProfiledBlock::forward_ms) == 33.533, tt::tolerance(1e-9));  // its inputs take no time
}

BOOST_AUTO_TEST_CASE(a_diamond_carries_both_branches) {
  // a -> b -> d, a -> c -> d: after b, both b's output and a's (for c) cross; after c, b's and c's.
  const std::string f = ", backward_compute_time=1, parameter_size=0\n";
  const LayerProfile p = [&] {
    const fs::path path = fs::temp_directory_path() / "dptrain-test-diamond.txt";
    std::ofstream(path) << "node4 -- D -- forward_compute_time=1, activation_size=1" << f
                        << "node2 -- B -- forward_compute_time=1, activation_size=10" << f
                        << "node1 -- A -- forward_compute_time=1, activation_size=100" << f
                        << "node3 -- C -- forward_compute_time=1, activation_size=1000" << f
                        << "\tnode1 -- node2\n\tnode1 -- node3\n\tnode2 -- node4\n\tnode3 -- node4\n";
    LayerProfile r = read_pipedream_graph(path.string());
    fs::remove(path);
    return r;
  }();
  BOOST_TEST_REQUIRE(p.blocks.size() == 4u);
  BOOST_TEST(p.blocks[0].id + p.blocks[1].id + p.blocks[2].id + p.blocks[3].id == "node1node2node3node4");
  BOOST_TEST(p.boundary_bytes == (std::vector<double>{100, 110, 1010}), tt::per_element());
  BOOST_TEST(!p.chain);
}

BOOST_AUTO_TEST_CASE(bad_profiles_name_the_line) {
  const std::string tail = ", backward_compute_time=1.0, activation_size=4.0, parameter_size=0.0\n";
  const std::string node2 = "node2 -- Linear -- forward_compute_time=1.0" + tail;
  BOOST_TEST(error_of(kGood + "node2 -- Linear -- forward_compute_time=1.0, activation_size=4.0, parameter_size=0\n") ==
             ":2: node node2 has no backward_compute_time");
  BOOST_TEST(error_of(kGood + "node2 -- Linear -- forward_compute_time=-1.0" + tail) ==
             ":2: forward_compute_time is -1, below 0");
  BOOST_TEST(error_of(kGood + "node2 -- Linear -- forward_compute_time=fast" + tail) ==
             ":2: forward_compute_time is 'fast', not a number");
  BOOST_TEST(error_of(kGood + node2 + node2) == ":3: node node2 is defined twice (first on line 2)");
  BOOST_TEST(error_of(kGood + node2 + "\tnode1 -- node9\n") == ":3: the edge node1 -- node9 names an unknown node node9");
  BOOST_TEST(error_of(kGood + node2 + "node3 -- ReLU -- forward_compute_time=1.0" + tail +
                      "\tnode2 -- node3\n\tnode3 -- node2\n") == ":2: node node2 is on a cycle of edges");
  BOOST_TEST(error_of(kGood + "just words\n") == ":2: a node line needs 'ID -- DESCRIPTION -- FIELDS'");
  BOOST_TEST(error_of(kGood + node2 + "\tnode1 -- node2 -- node3\n") == ":3: an edge line needs '\\tFROM -- TO'");
  BOOST_TEST(error_of(kGood) == ": the profile has no blocks (only input nodes, or none)");
  BOOST_CHECK_THROW(read_pipedream_graph("/nonexistent/graph.txt"), ProfileError);
  // Ids need not end in a number, nor in a short one: those nodes come after the numbered ones.
  BOOST_TEST(error_of(kGood + "conv -- Conv -- forward_compute_time=1.0" + tail +
                      "node123456789012345678901 -- ReLU -- forward_compute_time=1.0" + tail) == "no error");
}
