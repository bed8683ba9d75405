// One run at a time in a run folder: an exclusive flock(2) on RUN/lock, taken before anything is written
// there and held until the holder ends. The kernel releases it when the holding process dies, however it
// dies, so a killed run never leaves a folder stuck (its file stays, held by no one, and is taken over).
// The file says who holds it (host, pid, since when, which process), for the one-line refusal a second
// run gets. A holder that ends normally removes the file, and the folders it made only to hold it.
//
// Who holds it: `dptrain run` launching its own ranks holds it in the launcher (through every mpirun or
// srun it starts, and any restart it makes) and tells its ranks so (DPTRAIN_RUN_LOCK); ranks started by
// a foreign mpirun or by srun have rank 0 hold it.
#pragma once

#include <string>
#include <utility>

namespace dp {

class RunLock {
 public:
  // Holds `root`/lock, creating the folder and the file when absent. `holder` names this process for
  // others ("dptrain run launcher (mpirun)", "rank 0 under srun"). Throws UsageError naming the holder
  // (host, pid, since when) when another process holds it.
  static RunLock hold(const std::string& root, const std::string& holder);
  // For the ranks of a launcher that holds the lock: true when DPTRAIN_RUN_LOCK names `root` and the
  // lock file names the launcher's pid (it holds the folder for them).
  static bool held_by_our_launcher(const std::string& root);
  // Exported to the launched ranks once this process holds `root` (DPTRAIN_RUN_LOCK=pid:root).
  void export_to_children() const;

  RunLock(RunLock&& other) noexcept;
  RunLock& operator=(RunLock&&) = delete;
  RunLock(const RunLock&) = delete;
  ~RunLock();

  static std::string path(const std::string& root) { return root + "/lock"; }

 private:
  RunLock(int fd, std::string root, std::string created)
      : fd_(fd), root_(std::move(root)), created_(std::move(created)) {}
  int fd_ = -1;
  std::string root_;
  std::string created_;  // the outermost folder hold() created ("" when root existed)
};

}  // namespace dp
