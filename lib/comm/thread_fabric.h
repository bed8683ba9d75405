// The wire of the in-process thread transport (internal to lib/comm): mailboxes that match a send to a
// receive by (source, destination, tag) in posting order, as MPI does; completion, abort and deadlock
// detection. One Fabric per run_thread_ranks call, shared by every group that split() makes. Transfers are
// rendezvous: whichever side arrives second copies sender to receiver once, outside the lock.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace dp::threads {

// One posted send or receive. The fields after `thread` are guarded by the fabric's lock.
struct Message {
  bool is_send = false;
  const std::byte* send = nullptr;  // is_send: the data
  std::byte* recv = nullptr;        // !is_send: where it goes
  size_t bytes = 0;
  int source = 0, dest = 0, tag = 0;  // ranks within the group
  int thread = 0;                     // the posting thread (0..threads-1 of the fabric)
  bool matched = false, done = false;
  std::string error;  // set with done when the transfer failed (size mismatch)
};

// The ranks of one communicator: a mailbox per destination rank, and the groups being made by split().
struct Group {
  explicit Group(int n) : boxes(size_t(n)) {}
  struct Box {
    std::deque<std::shared_ptr<Message>> sends, recvs;  // not yet matched, in posting order
  };
  std::vector<Box> boxes;
  struct Pending {
    std::shared_ptr<Group> group;
    int to_join = 0;
  };
  std::map<std::pair<int64_t, int>, Pending> splits;  // (split number, color) -> the new group
};

class Fabric {
 public:
  explicit Fabric(int threads) : waiting_(size_t(threads)), ids_(size_t(threads)), live_(threads) {}

  // Called by each rank's thread before it communicates.
  void attach(int thread);

  // Posts m into group g; completes it right away when its partner is already there.
  std::shared_ptr<Message> post(Group& g, const Message& m);
  // Blocks until m completed; throws RuntimeFailure when it failed or the fabric was aborted.
  void wait(Message& m);
  bool test(Message& m);
  // Withdraws an unmatched message, or waits for the copy of a matched one to end. Never throws.
  void abandon(Group& g, Message& m) noexcept;

  // Makes every present and future wait throw RuntimeFailure with this reason (the first one stays).
  void abort(const std::string& reason);
  // A thread returned: it sends no more messages.
  void finished(int thread);
  // The group `members` ranks of parent's split number `seq` with this color share.
  std::shared_ptr<Group> join_split(Group& parent, int64_t seq, int color, int members);

 private:
  static std::string transfer(const Message& send, const Message& recv);  // "" or what went wrong
  void abort_locked(const std::string& reason);
  void check_deadlock_locked();
  void note_caller_locked(const Message& m);
  [[noreturn]] void throw_failure_locked(const Message& m) const;

  std::mutex mu_;
  std::condition_variable cv_;
  bool aborted_ = false;
  std::string reason_;
  // Deadlock detection: per rank thread, the message it is blocked on. It assumes each rank talks from its
  // own thread only; once another thread (say a background communication thread) posts or waits, it is
  // off for good, as blocked ranks could then be waiting for a thread that is still busy.
  std::vector<const Message*> waiting_;
  std::vector<std::thread::id> ids_;
  bool detect_ = true;
  int live_;  // rank threads that have not returned
};

}  // namespace dp::threads
