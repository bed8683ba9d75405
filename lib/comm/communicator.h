// The communicator every training component talks to. Rank, size and the communicator itself are always
// passed in, never global. Transports implement this interface (MPI here; in-process threads and NCCL
// come with the collective-algorithm work).
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace dp {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Ranks of this communicator on the same host as this rank (for dividing the cores).
  virtual int local_size() const = 0;
  virtual std::string host() const = 0;

  virtual void allreduce_sum(std::span<float> data) = 0;   // in place
  virtual void allreduce_sum(std::span<double> data) = 0;  // in place
  virtual void broadcast(std::span<std::byte> data, int root) = 0;
  // Every rank contributes mine.size() bytes; all receives size() * mine.size() bytes in rank order.
  virtual void allgather(std::span<const std::byte> mine, std::span<std::byte> all) = 0;
  virtual void barrier() = 0;
  // Ranks with the same color form a new communicator, ordered by key (MPI_Comm_split semantics).
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;

  // Gathers one trivially copyable value from every rank.
  template <class T>
  std::vector<T> allgather_value(const T& mine) {
    std::vector<T> all(static_cast<size_t>(size()));
    allgather(std::as_bytes(std::span<const T>(&mine, 1)), std::as_writable_bytes(std::span<T>(all)));
    return all;
  }
};

// Initialises MPI (thread support MPI_THREAD_MULTIPLE when available) for its lifetime.
class MpiRuntime {
 public:
  MpiRuntime(int* argc, char*** argv);
  ~MpiRuntime();
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;
  // Ends the job from any rank after an unrecoverable error (no collective finalize).
  [[noreturn]] static void abort(int exit_code);
};

// MPI_COMM_WORLD (duplicated) as a Communicator. Requires a live MpiRuntime.
std::unique_ptr<Communicator> mpi_world();

}  // namespace dp
