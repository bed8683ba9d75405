// The run folder's lock (run_lock.h): flock(2) on RUN/lock, the holder written into it as one JSON line.
#include "lib/train/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string_view>

#include "lib/core/error.h"
#include "lib/core/json.h"

namespace fs = std::filesystem;

namespace dp {
namespace {

constexpr const char* kEnv = "DPTRAIN_RUN_LOCK";

std::string host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

std::string read_all(int fd) {
  std::string text;
  char buf[512];
  for (off_t at = 0;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, at);
    if (n <= 0) break;
    text.append(buf, size_t(n));
    at += n;
    if (text.size() > 4096) break;  // a holder line is short; anything longer is not ours
  }
  return text;
}

// The string or number after "key": in the holder's line ("" when absent).
std::string field(const std::string& line, std::string_view key) {
  const std::string quoted = fmt::format("\"{}\": ", key);
  const size_t at = line.find(quoted);
  if (at == std::string::npos) return {};
  size_t begin = at + quoted.size(), end;
  if (begin < line.size() && line[begin] == '"') {
    end = line.find('"', ++begin);
  } else {
    end = line.find_first_of(",}", begin);
  }
  return end == std::string::npos ? std::string() : line.substr(begin, end - begin);
}

// "the dptrain run launcher, pid 4242 on host vm, since 2026-12-03 10:40:01 UTC"
std::string describe_holder(const std::string& line) {
  const std::string pid = field(line, "pid"), host = field(line, "host");
  if (pid.empty() || host.empty()) return "another run (it is starting: its details are not written yet)";
  return fmt::format("{}, pid {} on host {}, since {}", field(line, "holder"), pid, host, field(line, "since"));
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  return fmt::format("{:%Y-%m-%d %H:%M:%S} UTC", tm);
}

// The outermost folder of `root` that does not exist yet ("" when it exists).
fs::path first_missing(const std::string& root) {
  fs::path missing;
  std::error_code ec;
  for (fs::path p = fs::absolute(root, ec); !p.empty() && !fs::exists(p, ec) && !ec; p = p.parent_path()) {
    missing = p;
    if (p == p.parent_path()) break;
  }
  return missing;
}

bool same_file(int fd, const std::string& path) {
  struct stat open_file{}, named{};
  return ::fstat(fd, &open_file) == 0 && ::stat(path.c_str(), &named) == 0 && open_file.st_dev == named.st_dev &&
         open_file.st_ino == named.st_ino;
}

}  // namespace

RunLock RunLock::hold(const std::string& root, const std::string& holder) {
  const fs::path created = first_missing(root);
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) throw UsageError(root, "cannot create the output directory: " + ec.message(),
                           "choose a writable folder with --out or [job] output_dir");
  int fd = -1;
  // The holder removes the file when it lets go; a process that opened it just before must then try again
  // on the new one, or two runs would each hold a file of their own.
  for (;;) {
    // Not close-on-exec: a process that re-executes itself, and the mpirun or srun it starts, keep holding it.
    fd = ::open(path(root).c_str(), O_RDWR | O_CREAT, 0644);
    if (fd < 0)
      throw UsageError(path(root), fmt::format("cannot open the run's lock file: {}", std::strerror(errno)),
                       "choose a writable folder with --out or [job] output_dir");
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      const std::string line = read_all(fd);
      ::close(fd);
      if (err != EWOULDBLOCK)
        throw UsageError(path(root), fmt::format("cannot lock the run folder: {}", std::strerror(err)),
                         "use a local file system for the output directory (--out)");
      throw UsageError(root, "the run folder is in use by " + describe_holder(line),
                       "wait for that run to end (or stop it), or choose another folder with --out");
    }
    if (same_file(fd, path(root))) break;
    ::close(fd);
  }
  const std::string line = fmt::format("{{\"holder\": {}, \"pid\": {}, \"host\": {}, \"since\": {}}}\n",
                                       json_quoted(holder), ::getpid(), json_quoted(host_name()),
                                       json_quoted(utc_now()));
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, line.data(), line.size(), 0) != ssize_t(line.size())) {
    const int err = errno;
    ::close(fd);
    throw UsageError(path(root), fmt::format("cannot write the run's lock file: {}", std::strerror(err)),
                     "check free disk space and permissions of the output directory");
  }
  return RunLock(fd, root, created.string());
}

bool RunLock::held_by_our_launcher(const std::string& root) {
  const char* env = std::getenv(kEnv);
  if (!env) return false;
  const std::string value = env;
  const size_t colon = value.find(':');
  if (colon == std::string::npos) return false;
  std::error_code ec1, ec2;
  if (fs::weakly_canonical(value.substr(colon + 1), ec1) != fs::weakly_canonical(root, ec2) || ec1 || ec2)
    return false;
  const int fd = ::open(path(root).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  // Held by someone (the probe cannot take it), and the file names the launcher.
  const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  const std::string line = read_all(fd);
  ::close(fd);
  return held && field(line, "pid") == value.substr(0, colon);
}

void RunLock::export_to_children() const {
  ::setenv(kEnv, fmt::format("{}:{}", ::getpid(), root_).c_str(), 1);
}

RunLock::RunLock(RunLock&& other) noexcept
    : fd_(other.fd_), root_(std::move(other.root_)), created_(std::move(other.created_)) {
  other.fd_ = -1;
}

RunLock::~RunLock() {
  if (fd_ < 0) return;
  // The folder is left as the run left it: the lock file goes (removed while still held, so no one else
  // holds it yet), and so do the folders made only to hold it, when nothing else was written into them.
  std::error_code ec;
  fs::remove(path(root_), ec);
  ::close(fd_);
  if (created_.empty()) return;
  for (fs::path p = fs::absolute(root_, ec); !ec && p.string().size() >= created_.size(); p = p.parent_path())
    if (!fs::remove(p, ec) || p == p.parent_path()) break;  // stops at the first folder that is not empty
}

}  // namespace dp
