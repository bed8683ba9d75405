// PipeDream's graph.txt (profile.h): the node and edge lines, their checks, the topological order and the
// bytes that cross each boundary of it.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <queue>
#include <string_view>
#include <tuple>

#include "lib/core/error.h"
#include "lib/pipeline/profile.h"

namespace dp::pipeline {
namespace {

struct Node {
  ProfiledBlock block;
  int line = 0;
  bool input = false;       // a data source, not a block
  int64_t number = 0;       // the digits ending the id, for a stable order among ready nodes
  std::vector<int> next;    // the nodes that read its output
  int waiting = 0;          // predecessors not yet ordered
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, std::string_view by) {
  std::vector<std::string_view> parts;
  for (size_t at; (at = s.find(by)) != std::string_view::npos; s.remove_prefix(at + by.size()))
    parts.push_back(s.substr(0, at));
  parts.push_back(s);
  return parts;
}

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(int line, const std::string& what, const std::string& hint) const {
    throw ProfileError(fmt::format("{}:{}", path_, line), what, hint);
  }

  // A size or a time: a finite number at least 0; a list "[a; b; c]" (a tuple's sizes) sums.
  double number(std::string_view text, int line, std::string_view key) const {
    text = trim(text);
    const bool list = text.size() >= 2 && text.front() == '[' && text.back() == ']';
    double sum = 0;
    const std::vector<std::string_view> parts =
        list ? split(text.substr(1, text.size() - 2), ";") : std::vector<std::string_view>{text};
    for (std::string_view part : parts) {
      part = trim(part);
      double v = 0;
      const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
      if (ec != std::errc() || end != part.data() + part.size() || part.empty() || !std::isfinite(v))
        fail(line, fmt::format("{} is '{}', not a number", key, text), "give bytes or milliseconds as numbers");
      if (v < 0) fail(line, fmt::format("{} is {}, below 0", key, v), "times and sizes are at least 0");
      sum += v;
    }
    if (!std::isfinite(sum))
      fail(line, fmt::format("{} is '{}', whose sum is too large to represent", key, text), "give bytes or milliseconds");
    return sum;
  }

  void node(std::string_view text, int line) {
    const std::vector<std::string_view> parts = split(text, " -- ");
    if (parts.size() < 3)
      fail(line, "a node line needs 'ID -- DESCRIPTION -- FIELDS'", "edges start with a tab: '\\tFROM -- TO'");
    Node n;
    n.line = line;
    n.block.id = std::string(trim(parts.front()));
    for (size_t i = 1; i + 1 < parts.size(); ++i)  // descriptions may hold " -- " themselves
      n.block.description += (i > 1 ? " -- " : "") + std::string(parts[i]);
    n.block.description = std::string(trim(n.block.description));
    n.input = n.block.description.rfind("Input", 0) == 0;
    const std::string_view id = n.block.id;
    size_t digits = id.size();
    while (digits > 0 && id[digits - 1] >= '0' && id[digits - 1] <= '9') --digits;
    n.number = INT64_MAX;  // no number (or one too long to be one): after the numbered nodes, by id
    if (digits < id.size() && id.size() - digits <= 18) n.number = std::stoll(std::string(id.substr(digits)));
    bool seen[4] = {false, false, false, false};
    static constexpr std::string_view kKeys[4] = {"forward_compute_time", "backward_compute_time", "activation_size",
                                                  "parameter_size"};
    double* targets[4] = {&n.block.forward_ms, &n.block.backward_ms, &n.block.output_bytes, &n.block.param_bytes};
    for (std::string_view field : split(parts.back(), ", ")) {
      const size_t eq = field.find('=');
      const std::string_view key = trim(field.substr(0, eq));
      for (int k = 0; k < 4; ++k)
        if (eq != std::string_view::npos && key == kKeys[k]) {
          *targets[k] = number(field.substr(eq + 1), line, key);
          seen[k] = true;
        }
    }
    for (int k = 0; k < 4; ++k)
      if (!seen[k])
        fail(line, fmt::format("node {} has no {}", n.block.id, kKeys[k]),
             "a node gives forward_compute_time, backward_compute_time, activation_size and parameter_size");
    if (!index_.emplace(n.block.id, int(nodes_.size())).second)
      fail(line, fmt::format("node {} is defined twice (first on line {})", n.block.id, nodes_[size_t(index_[n.block.id])].line),
           "give every node one line");
    nodes_.push_back(std::move(n));
  }

  void edge(std::string_view text, int line) {
    const std::vector<std::string_view> parts = split(trim(text), " -- ");
    if (parts.size() != 2) fail(line, "an edge line needs '\\tFROM -- TO'", "node lines do not start with a tab");
    edges_.push_back({std::string(trim(parts[0])), std::string(trim(parts[1])), line});
  }

  LayerProfile read() {
    std::ifstream in(path_);
    if (!in) throw ProfileError(path_, "cannot open the profile", "check the path given to --profile");
    std::string text;
    for (int line = 1; std::getline(in, text); ++line) {
      if (trim(text).empty()) continue;
      if (text.front() == '\t') edge(text, line);
      else node(text, line);
    }
    for (const auto& [from, to, line] : edges_) {
      const auto a = index_.find(from), b = index_.find(to);
      if (a == index_.end() || b == index_.end())
        fail(line, fmt::format("the edge {} -- {} names an unknown node {}", from, to, a == index_.end() ? from : to),
             "every edge joins two nodes defined in the file");
      nodes_[size_t(a->second)].next.push_back(b->second);
      ++nodes_[size_t(b->second)].waiting;
    }
    return linearised();
  }

 private:
  // Kahn's algorithm, the ready node of the smallest number first; then the boundaries' bytes.
  LayerProfile linearised() {
    LayerProfile p;
    p.path = path_;
    using Ready = std::tuple<int64_t, std::string, int>;
    std::priority_queue<Ready, std::vector<Ready>, std::greater<>> ready;
    for (size_t i = 0; i < nodes_.size(); ++i)
      if (nodes_[i].waiting == 0) ready.push({nodes_[i].number, nodes_[i].block.id, int(i)});
    std::vector<int> order, position(nodes_.size(), -1);  // position: a block's index; -1 for inputs
    while (!ready.empty()) {
      const int u = std::get<2>(ready.top());
      ready.pop();
      order.push_back(u);
      if (!nodes_[size_t(u)].input) {
        position[size_t(u)] = int(p.blocks.size());
        p.blocks.push_back(nodes_[size_t(u)].block);
      }
      for (int v : nodes_[size_t(u)].next)
        if (--nodes_[size_t(v)].waiting == 0) ready.push({nodes_[size_t(v)].number, nodes_[size_t(v)].block.id, v});
    }
    if (order.size() != nodes_.size())
      for (const Node& n : nodes_)
        if (n.waiting > 0)
          fail(n.line, fmt::format("node {} is on a cycle of edges", n.block.id), "a profile is a graph without cycles");
    if (p.blocks.empty())
      throw ProfileError(path_, "the profile has no blocks (only input nodes, or none)", "profile a model");
    // A producer's output crosses every boundary from its own position to its last reader's.
    const size_t boundaries = p.blocks.size() - 1;
    std::vector<double> bytes(boundaries, 0.0);
    std::vector<int> producers(boundaries, 0);
    std::vector<bool> own(boundaries, false);  // block i's output crosses boundary i
    for (size_t u = 0; u < nodes_.size(); ++u) {
      int last = -1;
      for (int v : nodes_[u].next) last = std::max(last, position[size_t(v)]);
      const int from = position[u];  // -1 for an input: it is there before the first block
      if (from < 0 && last >= 0) p.input_bytes += nodes_[u].block.output_bytes;
      for (int b = std::max(from, 0); b < last; ++b) {
        bytes[size_t(b)] += nodes_[u].block.output_bytes;
        ++producers[size_t(b)];
        if (b == from) own[size_t(b)] = true;
      }
    }
    const auto too_big = [&](double v) { return !std::isfinite(v); };
    if (too_big(p.input_bytes) || std::any_of(bytes.begin(), bytes.end(), too_big))
      throw ProfileError(path_, "the activation sizes crossing a boundary add up to more than a number holds",
                         "give activation_size in bytes");
    p.boundary_bytes = bytes;
    for (size_t b = 0; b < boundaries; ++b) p.chain = p.chain && producers[b] == 1 && own[b];
    return p;
  }

  struct Edge {
    std::string from, to;
    int line;
  };
  std::string path_;
  std::vector<Node> nodes_;
  std::map<std::string, int> index_;
  std::vector<Edge> edges_;
};

}  // namespace

LayerProfile read_pipedream_graph(const std::string& path) { return Reader(path).read(); }

}  // namespace dp::pipeline
