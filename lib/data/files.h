// Shared by the data loaders: gzip handles and their error texts, and asking dpkg where a Debian package
// installed a file.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dp {

inline constexpr const char* kDamagedFileHint = "the file is damaged or incomplete; reinstall or re-download it";

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzPtr = std::unique_ptr<gzFile_s, GzCloser>;

// Before a data file is read whole: it must be a regular file (a pipe, a socket or a device such as
// /dev/zero may never end) and, `expansion` times its size (what it becomes in memory), fit in the
// memory available. Returns the bytes a reader may still hold (its limit while decompressing; -1: no
// limit known). Throws DataError naming the file, what it is and, with `hint`, how to fix it. A file that
// cannot be found is left to the reader's own error.
int64_t check_data_file(const std::string& path, double expansion, const std::string& hint);

// gzerror's text without the "PATH: " prefix zlib adds (DataError names the file already).
std::string gz_message(gzFile f, const std::string& path);

// The first file `dpkg -L package` lists whose path ends with one of `suffixes` (each starting with '/'),
// or "" when dpkg is missing, the package is absent or lists no such file.
std::string dpkg_listed_file(const std::string& package, const std::vector<std::string>& suffixes);

}  // namespace dp
