// The collective algorithms behind collectives.h (internal to lib/comm), one per file, each written only
// against the Communicator interface: ring_reduce_scatter.cpp, ring_allgather.cpp, ring_allreduce.cpp,
// native_allreduce.cpp, native_reduce_scatter.cpp, native_allgather.cpp. Instantiated for float and
// double. Arguments are already checked by collectives.cpp (sizes, aliasing).
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "lib/comm/collectives.h"
#include "lib/comm/communicator.h"

namespace dp::algo {

template <class T>
void native_allreduce(Communicator& comm, std::span<const T> in, std::span<T> out);
// on_piece (may be empty): CollectiveOptions::on_shard_piece.
using ShardPiece = std::function<void(size_t offset, size_t count)>;
template <class T>
void native_reduce_scatter(Communicator& comm, std::span<const T> in, std::span<T> shard,
                           const ShardPiece& on_piece);
template <class T>
void native_allgather(Communicator& comm, std::span<T> data);

template <class T>
void ring_allreduce(Communicator& comm, std::span<const T> in, std::span<T> out, size_t segment_bytes);
// through (empty, or in's size, may be in or overlap shard): where the partial sums on their way may be
// written; its chunks other than this rank's own and its left neighbour's are left undefined.
template <class T>
void ring_reduce_scatter(Communicator& comm, std::span<const T> in, std::span<T> shard, size_t segment_bytes,
                         const ShardPiece& on_piece, std::span<T> through = {});
template <class T>
void ring_allgather(Communicator& comm, std::span<T> data, size_t segment_bytes);

// --- shared by the ring algorithms -------------------------------------------------------------------------

// Message tags of the ring algorithms (MPI matches per tag in posting order).
inline constexpr int kTagRingInput = kCollectiveTag;        // reduce-scatter: a rank's own input
inline constexpr int kTagRingPartial = kCollectiveTag + 1;  // reduce-scatter: partial sums
inline constexpr int kTagRingGather = kCollectiveTag + 2;   // all-gather

// Neighbours on the ring and chunk arithmetic: chunk c of the buffer is shard_range(count, n, c).
struct Ring {
  explicit Ring(const Communicator& comm)
      : n(comm.size()), rank(comm.rank()), left((rank + n - 1) % n), right((rank + 1) % n) {}
  int chunk(int shift) const { return ((rank + shift) % n + n) % n; }  // chunk index rank + shift (mod n)
  int n, rank, left, right;
};

// One message: `count` elements from element `offset` of the buffer, received at ring step `step`.
struct Segment {
  int step = 0;
  size_t offset = 0, count = 0;
};

// Chunk `range` cut into messages of at most `max` elements (an empty chunk sends nothing). Sender and
// receiver cut the same chunk the same way, so the messages of a step match one to one.
inline void append_segments(std::vector<Segment>& out, int step, ShardRange range, size_t max) {
  for (size_t at = range.offset; at < range.end(); at += max)
    out.push_back({step, at, std::min(max, range.end() - at)});
}

// Segment k of chunk `range` cut as above; past the chunk's end it is empty (at the chunk's end).
inline Segment segment_of(ShardRange range, size_t k, size_t max, int step = 0) {
  const size_t at = std::min(range.offset + k * max, range.end());
  return {step, at, std::min(max, range.end() - at)};
}

template <class T>
size_t segment_elements(size_t segment_bytes) {
  return std::max<size_t>(1, segment_bytes / sizeof(T));
}

// dst[0, n) = src[0, n) in the communicator's memory (dst == src is allowed).
template <class T>
void copy_elements(Communicator& comm, T* dst, const T* src, size_t n) {
  comm.copy(reinterpret_cast<std::byte*>(dst), reinterpret_cast<const std::byte*>(src), n * sizeof(T));
}

template <class T>
std::span<const std::byte> bytes_of(const T* p, size_t n) {
  return std::as_bytes(std::span<const T>(p, n));
}
template <class T>
std::span<std::byte> bytes_of(T* p, size_t n) {
  return std::as_writable_bytes(std::span<T>(p, n));
}

}  // namespace dp::algo
