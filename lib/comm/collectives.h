// Collective operations over any Communicator, by algorithm: the transport's own (native: MPI_Allreduce,
// later ncclAllReduce) or dptrain's ring (ring_*.cpp: pipelined reduce-scatter and all-gather). Results are
// exact elementwise sums whose summation order is fixed for a given rank count, so runs are reproducible.
//
// Sharding: a buffer of `count` elements is split over the ranks by shard_range (the first count % ranks
// ranks hold one element more); reduce_scatter leaves each rank the sum of its shard, allgather_shards
// completes a buffer of which each rank holds its shard. The sharded optimizer uses the same layout.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "lib/comm/communicator.h"

namespace dp {

enum class CollectiveAlgorithm {
  native,  // the transport's collective (the baseline)
  ring,    // ring reduce-scatter + all-gather, segmented so that sends overlap the reductions
};

// "native", "ring". parse_ throws InputError naming the valid names.
std::string_view collective_algorithm_name(CollectiveAlgorithm a);
CollectiveAlgorithm parse_collective_algorithm(std::string_view name);
std::span<const CollectiveAlgorithm> collective_algorithms();  // every algorithm, in declaration order

// The elements [offset, offset + count) of a `count`-element buffer that `rank` of `ranks` owns.
struct ShardRange {
  size_t offset = 0;
  size_t count = 0;
  size_t end() const { return offset + count; }
  bool operator==(const ShardRange&) const = default;
};
ShardRange shard_range(size_t count, int ranks, int rank);

inline constexpr size_t kDefaultSegmentBytes = size_t(256) << 10;

struct CollectiveOptions {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::ring;
  // Ring algorithms move each chunk in messages of at most this many bytes, reducing one while the next
  // is in flight (ignored by native).
  size_t segment_bytes = kDefaultSegmentBytes;
  // reduce_scatter only: called with (offset into the buffer, count) of each piece of this rank's shard as
  // soon as that piece's sum is complete, covering the shard exactly once, in order. The ring calls it
  // segment by segment, so a consumer (MRA's optimizer) works on sums still in cache while later
  // segments are in flight; native calls it once at the end.
  std::function<void(size_t offset, size_t count)> on_shard_piece;
  // reduce_scatter in place only: the rest of the buffer (the other ranks' chunks) may be overwritten by
  // the partial sums on their way. The ring then needs no scratch for them, and no send holds up a
  // receive (lib/comm/ring_reduce_scatter.cpp).
  bool rest_is_scratch = false;
};

// out = sum over ranks of in. in and out have the same size; they are the same buffer or do not overlap.
void allreduce(Communicator& comm, std::span<const float> in, std::span<float> out,
               const CollectiveOptions& options = {});
void allreduce(Communicator& comm, std::span<const double> in, std::span<double> out,
               const CollectiveOptions& options = {});
void allreduce(Communicator& comm, std::span<float> data, const CollectiveOptions& options = {});
void allreduce(Communicator& comm, std::span<double> data, const CollectiveOptions& options = {});

// shard = sum over ranks of in[shard_range(in.size(), size, rank)]. shard has that range's size; it is
// either that very range of in (in place) or does not overlap in.
void reduce_scatter(Communicator& comm, std::span<const float> in, std::span<float> shard,
                    const CollectiveOptions& options = {});
void reduce_scatter(Communicator& comm, std::span<const double> in, std::span<double> shard,
                    const CollectiveOptions& options = {});
// In place: data[shard_range(...)] becomes the sum; the rest of data is left as it was, unless
// options.rest_is_scratch.
void reduce_scatter(Communicator& comm, std::span<float> data, const CollectiveOptions& options = {});
void reduce_scatter(Communicator& comm, std::span<double> data, const CollectiveOptions& options = {});

// On entry each rank's data[shard_range(data.size(), size, rank)] is valid; on return all of data is, on
// every rank.
void allgather_shards(Communicator& comm, std::span<float> data, const CollectiveOptions& options = {});
void allgather_shards(Communicator& comm, std::span<double> data, const CollectiveOptions& options = {});

}  // namespace dp
