// gzip error texts and dpkg look-ups for the data loaders.
#include "lib/data/files.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "lib/core/error.h"
#include "lib/core/memory_meter.h"

namespace dp {

int64_t check_data_file(const std::string& path, double expansion, const std::string& hint) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return available_host_bytes();  // the reader's open says why
  const char* kind = S_ISFIFO(st.st_mode) ? "a named pipe" : S_ISCHR(st.st_mode) ? "a character device"
                     : S_ISBLK(st.st_mode) ? "a block device" : S_ISSOCK(st.st_mode) ? "a socket"
                     : S_ISDIR(st.st_mode) ? "a folder" : nullptr;
  if (kind)
    throw DataError(path, fmt::format("is {}, not a regular file: dptrain reads data files whole, and this one "
                                      "may never end", kind), hint);
  const int64_t available = available_host_bytes();
  constexpr double kGiB = double(int64_t(1) << 30);
  if (available >= 0 && double(st.st_size) * expansion > double(available))
    throw DataError(path, fmt::format("{:.1f} GiB, about {:.1f} GiB in memory: more than the {:.1f} GiB this machine "
                                      "has available", double(st.st_size) / kGiB,
                                      double(st.st_size) * expansion / kGiB, double(available) / kGiB),
                    "use a smaller file, or a machine with more memory");
  return available;
}

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
