// Parsing OpenMPI hostfiles: the subset of the format mpirun's hostfile reader accepts that names
// machines and their slots (see hostfile.h).
#include "lib/launch/hostfile.h"

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "lib/core/error.h"

namespace dp {
namespace {

std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

int64_t count_value(std::string_view field, std::string_view value, const std::string& where) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size() || v < 1)
    throw UsageError(where, fmt::format("{} must be a whole number of at least 1, got '{}'", field, value),
                     "write, for example, node1 slots=4");
  return v;
}

}  // namespace

std::vector<HostfileEntry> parse_hostfile(std::string_view text, const std::string& path) {
  std::vector<HostfileEntry> hosts;
  std::set<std::string, std::less<>> seen;
  int line_number = 0;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    ++line_number;
    if (const size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    const auto w = words(line);
    if (w.empty()) continue;
    const std::string where = fmt::format("{}:{}", path, line_number);
    HostfileEntry e;
    e.host = std::string(w[0]);
    if (e.host.find('=') != std::string::npos)
      throw UsageError(where, fmt::format("a line starts with the machine's name, got '{}'", e.host),
                       "write: name [slots=N] [max_slots=N]");
    if (!seen.insert(e.host).second)
      throw UsageError(where, fmt::format("'{}' is listed twice", e.host), "give each machine one line");
    for (size_t i = 1; i < w.size(); ++i) {
      const size_t eq = w[i].find('=');
      const std::string_view field = w[i].substr(0, eq);
      if (eq == std::string_view::npos)
        throw UsageError(where, fmt::format("expected field=value after the name, got '{}'", w[i]),
                         "write: name [slots=N] [max_slots=N]");
      const std::string_view value = w[i].substr(eq + 1);
      if (field == "slots" || field == "count" || field == "cpu")
        e.slots = count_value(field, value, where);
      else if (field == "max_slots" || field == "max-slots")
        e.max_slots = count_value(field, value, where);
      else
        throw UsageError(where, fmt::format("unknown field '{}'", field), "valid fields: slots, max_slots");
    }
    if (e.slots && e.max_slots && e.max_slots < e.slots)
      throw UsageError(where, fmt::format("max_slots ({}) is less than slots ({})", e.max_slots, e.slots));
    hosts.push_back(std::move(e));
  }
  if (hosts.empty())
    throw UsageError(path, "the hostfile names no machine", "one machine per line: name [slots=N]");
  return hosts;
}

std::vector<HostfileEntry> read_hostfile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UsageError(path, "cannot read the hostfile (launch.hostfile): it is a directory",
                     "give the path of a file: one machine per line, name [slots=N]");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    throw UsageError(path, fmt::format("cannot read the hostfile (launch.hostfile): {}", std::strerror(err)),
                     "a relative hostfile is taken from the job file's folder");
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse_hostfile(text.str(), path);
}

}  // namespace dp
