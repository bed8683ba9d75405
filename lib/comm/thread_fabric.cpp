// Matching, completion, abort and deadlock detection of the thread transport (see thread_fabric.h).
#include "lib/comm/thread_fabric.h"

#include <algorithm>
#include <cstring>

#include "lib/core/error.h"

namespace dp::threads {
namespace {

std::string describe(const Message& m) {
  return m.is_send ? "rank " + std::to_string(m.source) + " sends to rank " + std::to_string(m.dest) +
                         " (tag " + std::to_string(m.tag) + ")"
                   : "rank " + std::to_string(m.dest) + " receives from rank " + std::to_string(m.source) +
                         " (tag " + std::to_string(m.tag) + ")";
}

}  // namespace

std::shared_ptr<Message> Fabric::post(Group& g, const Message& m) {
  auto mine = std::make_shared<Message>(m);
  std::shared_ptr<Message> partner;
  {
    std::lock_guard lock(mu_);
    if (aborted_) throw_failure_locked(m);
    note_caller_locked(m);
    Group::Box& box = g.boxes[size_t(m.dest)];
    auto& others = m.is_send ? box.recvs : box.sends;
    auto it = std::find_if(others.begin(), others.end(), [&](const auto& o) {
      return o->source == m.source && o->tag == m.tag;
    });
    if (it == others.end()) {  // first to arrive: wait in the mailbox for the partner
      (m.is_send ? box.sends : box.recvs).push_back(mine);
      return mine;
    }
    partner = *it;
    others.erase(it);
    mine->matched = partner->matched = true;
  }
  // Second to arrive: copy outside the lock, then complete both sides.
  std::string error = transfer(m.is_send ? *mine : *partner, m.is_send ? *partner : *mine);
  {
    std::lock_guard lock(mu_);
    mine->error = partner->error = error;
    mine->done = partner->done = true;
  }
  cv_.notify_all();
  return mine;
}

std::string Fabric::transfer(const Message& send, const Message& recv) {
  if (send.bytes != recv.bytes)
    return "message of " + std::to_string(send.bytes) + " bytes where " + std::to_string(recv.bytes) +
           " were expected (" + describe(recv) + ")";
  if (send.bytes) std::memcpy(recv.recv, send.send, send.bytes);
  return {};
}

void Fabric::wait(Message& m) {
  std::unique_lock lock(mu_);
  note_caller_locked(m);
  if (!m.done) {
    if (detect_) waiting_[size_t(m.thread)] = &m;
    check_deadlock_locked();
    cv_.wait(lock, [&] { return m.done || aborted_; });
    waiting_[size_t(m.thread)] = nullptr;
  }
  if (!m.done || !m.error.empty()) throw_failure_locked(m);
}

bool Fabric::test(Message& m) {
  std::lock_guard lock(mu_);
  if (m.done ? !m.error.empty() : aborted_) throw_failure_locked(m);
  return m.done;
}

void Fabric::abandon(Group& g, Message& m) noexcept {
  std::unique_lock lock(mu_);
  if (m.done) return;
  if (m.matched) {  // the partner is copying from or into this buffer right now: let it finish
    cv_.wait(lock, [&] { return m.done; });
    return;
  }
  // Unmatched: it is still in its mailbox; withdraw it.
  Group::Box& box = g.boxes[size_t(m.dest)];
  auto& queue = m.is_send ? box.sends : box.recvs;
  std::erase_if(queue, [&](const auto& q) { return q.get() == &m; });
  m.done = true;
}

void Fabric::attach(int thread) {
  std::lock_guard lock(mu_);
  ids_[size_t(thread)] = std::this_thread::get_id();
}

void Fabric::note_caller_locked(const Message& m) {
  if (detect_ && ids_[size_t(m.thread)] != std::this_thread::get_id()) {
    detect_ = false;
    std::fill(waiting_.begin(), waiting_.end(), nullptr);
  }
}

void Fabric::abort(const std::string& reason) {
  {
    std::lock_guard lock(mu_);
    abort_locked(reason);
  }
  cv_.notify_all();
}

void Fabric::abort_locked(const std::string& reason) {
  if (aborted_) return;
  aborted_ = true;
  reason_ = reason;
  cv_.notify_all();
}

void Fabric::finished(int thread) {
  {
    std::lock_guard lock(mu_);
    waiting_[size_t(thread)] = nullptr;
    --live_;
    check_deadlock_locked();
  }
  cv_.notify_all();
}

// Every thread still running is blocked on a message that no one can complete any more.
void Fabric::check_deadlock_locked() {
  if (!detect_ || aborted_ || live_ == 0) return;
  int blocked = 0;
  std::string list;
  for (const Message* w : waiting_) {
    if (!w || w->done) continue;
    ++blocked;
    list += (list.empty() ? "" : "; ") + describe(*w);
  }
  if (blocked == live_) abort_locked("deadlock: every running rank waits for a message (" + list + ")");
}

void Fabric::throw_failure_locked(const Message& m) const {
  if (!m.error.empty()) throw RuntimeFailure("thread transport", m.error, "sizes must match exactly");
  throw RuntimeFailure("thread transport", "aborted while " + describe(m) + ": " + reason_);
}

std::shared_ptr<Group> Fabric::join_split(Group& parent, int64_t seq, int color, int members) {
  std::lock_guard lock(mu_);
  auto [it, fresh] = parent.splits.try_emplace({seq, color});
  if (fresh) it->second = {std::make_shared<Group>(members), members};
  std::shared_ptr<Group> group = it->second.group;
  if (--it->second.to_join == 0) parent.splits.erase(it);
  return group;
}

}  // namespace dp::threads
