// gzip error texts and dpkg look-ups for the data loaders.
#include "lib/data/files.h"

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace dp {

std::string gz_message(gzFile f, const std::string& path) {
  int code = 0;
  const char* msg = gzerror(f, &code);
  if (code == Z_ERRNO) return std::string("cannot read: ") + std::strerror(errno);
  std::string s = msg ? msg : "unknown gzip error";
  if (s.rfind(path + ": ", 0) == 0) s.erase(0, path.size() + 2);
  return "damaged gzip data: " + s;
}

std::string dpkg_listed_file(const std::string& package, const std::vector<std::string>& suffixes) {
  FILE* p = popen(("dpkg -L " + package + " 2>/dev/null").c_str(), "r");
  if (!p) return {};
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  pclose(p);
  for (size_t start = 0; start < out.size();) {
    size_t end = out.find('\n', start);
    if (end == std::string::npos) end = out.size();
    const std::string line = out.substr(start, end - start);
    for (const auto& suffix : suffixes)
      if (line.size() > suffix.size() && line.ends_with(suffix)) return line;
    start = end + 1;
  }
  return {};
}

}  // namespace dp
