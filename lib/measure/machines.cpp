// The machines a run computes on: each rank's CPU, BLAS kernels, convolution implementation and threads
// (lib/machine), gathered so that a cluster whose machines differ shows every kind once, with its ranks.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "kernels/cpu/conv.h"
#include "lib/core/json.h"
#include "lib/measure/device.h"

namespace dp {

machine::MachineReport this_machine() {
  machine::MachineReport r = machine::report_machine();
  r.convolutions = cpu::conv2d_implementation();  // threads: OpenBLAS's, which compute_threads() sets
  return r;
}

RunMachines gather_machines(Communicator& comm) {
  struct Wire {  // fixed size for allgather; longer texts are cut (brand strings are at most 48 bytes)
    std::array<char, 640> line;
    std::array<char, 1536> json;
    std::array<char, 64> host;  // the rank's node (its host name)
  };
  const machine::MachineReport mine = this_machine();
  Wire w{};
  std::strncpy(w.line.data(), mine.line().c_str(), w.line.size() - 1);
  std::strncpy(w.json.data(), mine.json().c_str(), w.json.size() - 1);
  std::strncpy(w.host.data(), comm.host().c_str(), w.host.size() - 1);
  const std::vector<Wire> all = comm.allgather_value(w);

  std::vector<std::pair<std::string, std::vector<int>>> kinds;  // (line, ranks) in order of first rank
  std::vector<std::string> jsons;
  for (size_t r = 0; r < all.size(); ++r) {
    const std::string line(all[r].line.data());
    auto it = std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.first == line; });
    if (it == kinds.end()) {
      kinds.push_back({line, {}});
      jsons.emplace_back(all[r].json.data());
      it = kinds.end() - 1;
    }
    it->second.push_back(int(r));
  }
  RunMachines out;
  std::vector<std::string> objects;
  for (size_t i = 0; i < kinds.size(); ++i) {
    const auto& [line, ranks] = kinds[i];
    out.lines.push_back(kinds.size() == 1 ? "machine: " + line
                                          : fmt::format("machine of rank(s) {}: {}", fmt::join(ranks, ","), line));
    std::string obj = jsons[i];  // "{...}" with the ranks and their hosts added in front
    std::vector<std::string> hosts;
    for (int r : ranks) hosts.push_back(json_quoted(all[size_t(r)].host.data()));
    objects.push_back(fmt::format("{{\"ranks\": [{}], \"hosts\": [{}], {}", fmt::join(ranks, ", "),
                                  fmt::join(hosts, ", "), obj.substr(1)));
  }
  // Ranks on more than one node: which node each runs on (failures and restarts name nodes).
  std::vector<std::pair<std::string, std::vector<int>>> nodes;
  for (size_t r = 0; r < all.size(); ++r) {
    const std::string host(all[r].host.data());
    auto it = std::find_if(nodes.begin(), nodes.end(), [&](const auto& n) { return n.first == host; });
    if (it == nodes.end()) it = nodes.insert(nodes.end(), {host, {}});
    it->second.push_back(int(r));
  }
  if (nodes.size() > 1) {
    std::vector<std::string> parts;
    for (const auto& [host, ranks] : nodes) parts.push_back(fmt::format("{} ({})", host, fmt::join(ranks, ",")));
    out.lines.push_back(fmt::format("nodes: {}", fmt::join(parts, ", ")));
  }
  out.json = fmt::format("[{}]", fmt::join(objects, ", "));
  return out;
}

}  // namespace dp
