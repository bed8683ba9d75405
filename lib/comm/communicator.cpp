// What every transport shares: request handles, sendrecv, and the host memory space (allocation, copies
// and the elementwise reduction the collective algorithms run between receiving and sending).
#include "lib/comm/communicator.h"

#include <cstdlib>
#include <cstring>

#include "lib/core/error.h"

namespace dp {

Request& Request::operator=(Request&& other) noexcept {
  if (this != &other) {
    if (impl_) impl_->abandon();
    impl_ = std::move(other.impl_);
  }
  return *this;
}

Request::~Request() {
  if (impl_) impl_->abandon();
}

void Request::wait() {
  if (!impl_) return;
  impl_->wait();  // on a throw the request stays pending and is abandoned by the destructor
  impl_.reset();
}

bool Request::test() {
  if (!impl_) return true;
  if (!impl_->test()) return false;
  impl_.reset();
  return true;
}

void wait_all(std::span<Request> requests) {
  for (Request& r : requests) r.wait();
}

void Communicator::sendrecv(std::span<const std::byte> send, int to, std::span<std::byte> recv, int from,
                            int tag) {
  Request r = irecv(recv, from, tag);
  Request s = isend(send, to, tag);
  r.wait();
  s.wait();
}

namespace {
void free_host(std::byte* p) { std::free(p); }

// dst = a + b. `ivdep`: dst may be a or b, but never a shifted view of them, so there is no
// dependence between iterations and the loop vectorises without alias checks.
template <class T>
void add_host(T* dst, const T* a, const T* b, size_t n) {
#pragma GCC ivdep
  for (size_t i = 0; i < n; ++i) dst[i] = a[i] + b[i];
}
}  // namespace

Memory Communicator::allocate(size_t bytes) {
  const size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0) return Memory(nullptr, MemoryDeleter{free_host});
  auto* p = static_cast<std::byte*>(std::aligned_alloc(64, rounded));
  if (!p) throw RuntimeFailure("host memory", "cannot allocate " + std::to_string(bytes) + " bytes");
  return Memory(p, MemoryDeleter{free_host});
}

std::byte* Communicator::workspace(size_t bytes) {
  if (bytes > workspace_bytes_) {
    workspace_.reset();  // before allocating: the old and the new one need not fit together
    workspace_bytes_ = 0;
    workspace_ = allocate(bytes);
    workspace_bytes_ = bytes;
  }
  return workspace_.get();
}

void Communicator::copy(std::byte* dst, const std::byte* src, size_t bytes) {
  if (bytes && dst != src) std::memmove(dst, src, bytes);
}

void Communicator::reduce_add(float* dst, const float* a, const float* b, size_t n) {
  add_host(dst, a, b, n);
}
void Communicator::reduce_add(double* dst, const double* a, const double* b, size_t n) {
  add_host(dst, a, b, n);
}

}  // namespace dp
