// The public collectives: algorithm names, the shard layout, argument checks and the dispatch to the
// algorithm files (algorithms.h).
#include "lib/comm/collectives.h"

#include <array>
#include <functional>

#include "lib/comm/algorithms.h"
#include "lib/core/error.h"

namespace dp {
namespace {

constexpr std::array kAlgorithms{CollectiveAlgorithm::native, CollectiveAlgorithm::ring};

// True when [a, a+na) and [b, b+nb) share an element (compared as addresses, as std::less allows).
template <class T>
bool overlap(const T* a, size_t na, const T* b, size_t nb) {
  if (na == 0 || nb == 0) return false;
  const std::less<const T*> less;
  return less(a, b + nb) && less(b, a + na);
}

[[noreturn]] void unknown_algorithm(CollectiveAlgorithm a) {
  throw InternalError("collectives", "unknown collective algorithm " + std::to_string(int(a)));
}

template <class T>
void allreduce_impl(Communicator& comm, std::span<const T> in, std::span<T> out, const CollectiveOptions& o) {
  DP_CHECK(in.size() == out.size(), "allreduce: input and output differ in size");
  DP_CHECK(in.data() == out.data() || !overlap(in.data(), in.size(), out.data(), out.size()),
           "allreduce: input and output overlap without being the same buffer");
  switch (o.algorithm) {
    case CollectiveAlgorithm::native: return algo::native_allreduce(comm, in, out);
    case CollectiveAlgorithm::ring: return algo::ring_allreduce(comm, in, out, o.segment_bytes);
  }
  unknown_algorithm(o.algorithm);
}

template <class T>
void reduce_scatter_impl(Communicator& comm, std::span<const T> in, std::span<T> shard,
                         const CollectiveOptions& o, std::span<T> through = {}) {
  const ShardRange mine = shard_range(in.size(), comm.size(), comm.rank());
  DP_CHECK(shard.size() == mine.count, "reduce_scatter: the shard does not have this rank's shard size");
  DP_CHECK(shard.data() == in.data() + mine.offset ||
               !overlap(in.data(), in.size(), static_cast<const T*>(shard.data()), shard.size()),
           "reduce_scatter: the shard overlaps the input other than as its own shard");
  switch (o.algorithm) {
    case CollectiveAlgorithm::native: return algo::native_reduce_scatter(comm, in, shard, o.on_shard_piece);
    case CollectiveAlgorithm::ring:
      return algo::ring_reduce_scatter(comm, in, shard, o.segment_bytes, o.on_shard_piece, through);
  }
  unknown_algorithm(o.algorithm);
}

template <class T>
void allgather_impl(Communicator& comm, std::span<T> data, const CollectiveOptions& o) {
  switch (o.algorithm) {
    case CollectiveAlgorithm::native: return algo::native_allgather(comm, data);
    case CollectiveAlgorithm::ring: return algo::ring_allgather(comm, data, o.segment_bytes);
  }
  unknown_algorithm(o.algorithm);
}

template <class T>
std::span<T> own_shard(Communicator& comm, std::span<T> data) {
  const ShardRange mine = shard_range(data.size(), comm.size(), comm.rank());
  return data.subspan(mine.offset, mine.count);
}

}  // namespace

std::string_view collective_algorithm_name(CollectiveAlgorithm a) {
  switch (a) {
    case CollectiveAlgorithm::native: return "native";
    case CollectiveAlgorithm::ring: return "ring";
  }
  unknown_algorithm(a);
}

CollectiveAlgorithm parse_collective_algorithm(std::string_view name) {
  std::string valid;
  for (CollectiveAlgorithm a : kAlgorithms) {
    if (collective_algorithm_name(a) == name) return a;
    valid += (valid.empty() ? "" : ", ") + std::string(collective_algorithm_name(a));
  }
  throw InputError("", "unknown collective algorithm '" + std::string(name) + "'; valid: " + valid);
}

std::span<const CollectiveAlgorithm> collective_algorithms() { return kAlgorithms; }

ShardRange shard_range(size_t count, int ranks, int rank) {
  DP_CHECK(ranks >= 1 && rank >= 0 && rank < ranks, "shard_range: rank out of range");
  const size_t n = size_t(ranks), r = size_t(rank);
  const size_t base = count / n, extra = count % n;  // the first `extra` ranks hold base + 1
  return {r * base + std::min(r, extra), base + (r < extra ? 1 : 0)};
}

void allreduce(Communicator& c, std::span<const float> in, std::span<float> out, const CollectiveOptions& o) {
  allreduce_impl(c, in, out, o);
}
void allreduce(Communicator& c, std::span<const double> in, std::span<double> out,
               const CollectiveOptions& o) {
  allreduce_impl(c, in, out, o);
}
void allreduce(Communicator& c, std::span<float> data, const CollectiveOptions& o) {
  allreduce_impl(c, std::span<const float>(data), data, o);
}
void allreduce(Communicator& c, std::span<double> data, const CollectiveOptions& o) {
  allreduce_impl(c, std::span<const double>(data), data, o);
}

void reduce_scatter(Communicator& c, std::span<const float> in, std::span<float> shard,
                    const CollectiveOptions& o) {
  reduce_scatter_impl(c, in, shard, o);
}
void reduce_scatter(Communicator& c, std::span<const double> in, std::span<double> shard,
                    const CollectiveOptions& o) {
  reduce_scatter_impl(c, in, shard, o);
}
void reduce_scatter(Communicator& c, std::span<float> data, const CollectiveOptions& o) {
  reduce_scatter_impl(c, std::span<const float>(data), own_shard(c, data), o,
                      o.rest_is_scratch ? data : std::span<float>{});
}
void reduce_scatter(Communicator& c, std::span<double> data, const CollectiveOptions& o) {
  reduce_scatter_impl(c, std::span<const double>(data), own_shard(c, data), o,
                      o.rest_is_scratch ? data : std::span<double>{});
}

void allgather_shards(Communicator& c, std::span<float> data, const CollectiveOptions& o) {
  allgather_impl(c, data, o);
}
void allgather_shards(Communicator& c, std::span<double> data, const CollectiveOptions& o) {
  allgather_impl(c, data, o);
}

}  // namespace dp
