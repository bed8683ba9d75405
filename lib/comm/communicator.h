// The communicator every training component talks to. Rank, size and the communicator itself are always
// passed in, never global. Transports implement this interface: MPI (mpi_communicator.cpp), in-process
// threads (thread_communicator.h, for tests and simulation). Collective algorithms (collectives.h) are
// written once against it: point-to-point on bytes plus the "memory space" hooks (allocate, copy,
// reduce_add), host loops here, kept virtual for a transport whose buffers live elsewhere.
// GPU ranks talk NCCL through a CollectiveQueue instead (collective_queue.h): NCCL's point-to-point calls
// have no tags and block the GPU until matched (they must be grouped to progress together), so the
// host-driven algorithms here cannot run on them; NCCL's own collectives are already rings.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace dp {

// Tags of point-to-point messages are 0..kMaxTag (MPI guarantees at least 32767). Tags from
// kCollectiveTag up are used by the collective algorithms; keep your own messages below it.
inline constexpr int kMaxTag = 32767;
inline constexpr int kCollectiveTag = 32000;

// A pending isend/irecv. Move-only; wait() (or test() until true) before touching the buffer again.
// Destroying or assigning over a pending request (error paths only) cancels a receive and detaches a send.
class Request {
 public:
  struct Impl {
    virtual ~Impl() = default;
    virtual void wait() = 0;             // throws RuntimeFailure when the transport failed or was aborted
    virtual bool test() = 0;             // true once complete; never blocks
    virtual void abandon() noexcept = 0;  // called by ~Request on a request still pending
  };
  Request() = default;
  explicit Request(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
  Request(Request&&) noexcept = default;
  Request& operator=(Request&& other) noexcept;
  ~Request();

  void wait();                                   // no-op once complete (or for an empty request)
  bool test();                                   // true once complete
  bool pending() const { return impl_ != nullptr; }

 private:
  std::unique_ptr<Impl> impl_;
};

// Waits for every request in order (the first failure is thrown; the rest are abandoned by their owners).
void wait_all(std::span<Request> requests);

// Memory owned by a transport (host here, device memory on a GPU transport).
struct MemoryDeleter {
  void (*release)(std::byte*) = nullptr;
  void operator()(std::byte* p) const {
    if (release) release(p);
  }
};
using Memory = std::unique_ptr<std::byte[], MemoryDeleter>;

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Ranks of this communicator on the same host as this rank (for dividing the cores).
  virtual int local_size() const = 0;
  virtual std::string host() const = 0;

  // --- point to point (bytes; the receive size must equal the send size) --------------------------------
  // Messages between two ranks with the same tag arrive in the order they were sent (MPI semantics).
  // Safe to call from several threads at once on one communicator (MPI_THREAD_MULTIPLE); collectives are
  // not: run those of one communicator from one thread at a time (split() gives a thread its own).
  virtual Request isend(std::span<const std::byte> data, int peer, int tag) = 0;
  virtual Request irecv(std::span<std::byte> data, int peer, int tag) = 0;
  // Sends to `to` while receiving from `from` (neither waits for the other).
  void sendrecv(std::span<const std::byte> send, int to, std::span<std::byte> recv, int from, int tag);

  // --- memory space: buffers given to this communicator live here ---------------------------------------
  virtual Memory allocate(size_t bytes);                                       // default: host, 64-aligned
  virtual void copy(std::byte* dst, const std::byte* src, size_t bytes);        // host or this memory
  virtual void reduce_add(float* dst, const float* a, const float* b, size_t n);    // dst = a + b
  virtual void reduce_add(double* dst, const double* a, const double* b, size_t n); // (dst may be a or b)
  void reduce_add(float* dst, const float* src, size_t n) { reduce_add(dst, dst, src, n); }
  void reduce_add(double* dst, const double* src, size_t n) { reduce_add(dst, dst, src, n); }
  // Scratch of at least `bytes` in this memory for the collective algorithms, kept from call to call
  // (allocating it each time costs page faults); valid until the next call. Collectives only.
  std::byte* workspace(size_t bytes);

  // --- the transport's own collectives ------------------------------------------------------------------
  // out = elementwise sum over ranks of in; in and out may be the same buffer (MPI_Allreduce here). The
  // baseline the algorithms of collectives.h are measured against.
  virtual void allreduce_sum(std::span<const float> in, std::span<float> out) = 0;
  virtual void allreduce_sum(std::span<const double> in, std::span<double> out) = 0;
  void allreduce_sum(std::span<float> data) { allreduce_sum(std::span<const float>(data), data); }
  void allreduce_sum(std::span<double> data) { allreduce_sum(std::span<const double>(data), data); }
  virtual void broadcast(std::span<std::byte> data, int root) = 0;
  // Every rank contributes mine.size() bytes; all receives size() * mine.size() bytes in rank order.
  virtual void allgather(std::span<const std::byte> mine, std::span<std::byte> all) = 0;
  virtual void barrier() = 0;
  // Ranks with the same color (>= 0) form a new communicator, ordered by key then rank (MPI_Comm_split).
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;

  // Gathers one trivially copyable value from every rank.
  template <class T>
  std::vector<T> allgather_value(const T& mine) {
    std::vector<T> all(static_cast<size_t>(size()));
    allgather(std::as_bytes(std::span<const T>(&mine, 1)), std::as_writable_bytes(std::span<T>(all)));
    return all;
  }

 private:
  Memory workspace_;
  size_t workspace_bytes_ = 0;
};

// Initialises MPI (thread support MPI_THREAD_MULTIPLE when available) for its lifetime.
class MpiRuntime {
 public:
  MpiRuntime(int* argc, char*** argv);
  ~MpiRuntime();
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;
  // Whether MPI granted MPI_THREAD_MULTIPLE (needed to communicate from a background thread).
  static bool thread_multiple();
  // Ends the job from any rank after an unrecoverable error (no collective finalize).
  [[noreturn]] static void abort(int exit_code);
};

// MPI_COMM_WORLD (duplicated) as a Communicator. Requires a live MpiRuntime.
std::unique_ptr<Communicator> mpi_world();

}  // namespace dp
