// Shared by the thread and MPI tests of the collectives: crafted data whose sums are exact (element i of
// rank r is r + 1 + (i % 17) / 2, so over n ranks it sums to n(n+1)/2 + n (i % 17) / 2), and one check of
// allreduce, reduce_scatter and allgather_shards for a case, reporting the first wrong element as text
// (so that rank threads can report without touching Boost.Test, which is not thread-safe).
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "lib/comm/collectives.h"

namespace dp::testing {

template <class T>
T input_value(int rank, size_t i) {
  return T(rank + 1) + T(i % 17) * T(0.5);
}
template <class T>
T sum_value(int ranks, size_t i) {
  return T(ranks * (ranks + 1) / 2) + T(ranks) * T(i % 17) * T(0.5);
}
template <class T>
T gathered_value(size_t i) {  // what allgather_shards spreads: depends on the element only
  return T(i % 4093) * T(0.25) + T(1);
}
constexpr float kSentinel = -12345.0f;

struct Case {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::ring;
  size_t count = 0;
  bool in_place = false;
  size_t segment_bytes = kDefaultSegmentBytes;
};

inline std::string describe(const Case& c, int ranks) {
  return fmt::format("{} ranks={} count={} {} segment={}B", collective_algorithm_name(c.algorithm), ranks,
                     c.count, c.in_place ? "in-place" : "out-of-place", c.segment_bytes);
}

// "" when data[i] == want(i + first) for all i, else the first difference.
template <class T, class F>
std::string compare(const char* what, const std::vector<T>& data, size_t first, F want) {
  for (size_t i = 0; i < data.size(); ++i)
    if (data[i] != want(i + first))
      return fmt::format("{}: element {} is {} instead of {}", what, i + first, data[i], want(i + first));
  return {};
}

// Runs the three collectives for one case on comm; "" when all results are exact.
template <class T>
std::string check_case(Communicator& comm, const Case& c) {
  const int n = comm.size(), rank = comm.rank();
  const CollectiveOptions options{c.algorithm, c.segment_bytes, {}};
  const ShardRange mine = shard_range(c.count, n, rank);
  auto input = [&](size_t i) { return input_value<T>(rank, i); };
  auto sum = [&](size_t i) { return sum_value<T>(n, i); };
  std::vector<T> in(c.count);
  for (size_t i = 0; i < c.count; ++i) in[i] = input(i);
  std::string error;
  auto note = [&](std::string e) {
    if (error.empty() && !e.empty()) error = describe(c, n) + " rank " + std::to_string(rank) + ": " + e;
  };

  // allreduce
  if (c.in_place) {
    std::vector<T> data = in;
    allreduce(comm, std::span(data), options);
    note(compare("allreduce", data, 0, sum));
  } else {
    std::vector<T> out(c.count, T(kSentinel));
    allreduce(comm, std::span<const T>(in), std::span(out), options);
    note(compare("allreduce", out, 0, sum));
    note(compare("allreduce input", in, 0, input));
  }

  // reduce_scatter: the shard holds the sum; in place, the rest of the buffer is untouched (unless the
  // caller gives it up as scratch)
  if (c.in_place) {
    std::vector<T> data = in;
    reduce_scatter(comm, std::span(data), options);
    note(compare("reduce_scatter shard", std::vector<T>(data.begin() + ptrdiff_t(mine.offset),
                                                         data.begin() + ptrdiff_t(mine.end())),
                 mine.offset, sum));
    for (size_t i = 0; i < c.count; ++i)
      if ((i < mine.offset || i >= mine.end()) && data[i] != input(i) && error.empty())
        note(fmt::format("reduce_scatter changed element {} outside the shard", i));
    // rest_is_scratch: the partial sums may pass through the rest; the shard is the same exact sum
    CollectiveOptions scratch = options;
    scratch.rest_is_scratch = true;
    data = in;
    reduce_scatter(comm, std::span(data), scratch);
    note(compare("reduce_scatter (rest_is_scratch) shard",
                 std::vector<T>(data.begin() + ptrdiff_t(mine.offset), data.begin() + ptrdiff_t(mine.end())),
                 mine.offset, sum));
  } else {
    std::vector<T> shard(mine.count, T(kSentinel));
    reduce_scatter(comm, std::span<const T>(in), std::span(shard), options);
    note(compare("reduce_scatter shard", shard, mine.offset, sum));
    note(compare("reduce_scatter input", in, 0, input));
  }

  // allgather_shards: only this rank's shard is valid on entry
  std::vector<T> data(c.count, T(kSentinel));
  for (size_t i = mine.offset; i < mine.end(); ++i) data[i] = gathered_value<T>(i);
  allgather_shards(comm, std::span(data), options);
  note(compare("allgather_shards", data, 0, [](size_t i) { return gathered_value<T>(i); }));
  return error;
}

// The counts every algorithm is checked at on n ranks (deduplicated, in order).
inline std::vector<size_t> test_counts(int n, size_t largest) {
  std::vector<size_t> counts;
  for (size_t c : {size_t(0), size_t(1), size_t(n - 1), size_t(n + 1), size_t(7), size_t(1001),
                   size_t(100003), largest})
    if (std::find(counts.begin(), counts.end(), c) == counts.end()) counts.push_back(c);
  return counts;
}

// Cases at one rank count: every algorithm x count x placement; small counts also with tiny segments
// (three floats) and the middle one with 4 KiB segments, so chunks are cut into many messages.
inline std::vector<Case> test_cases(int n, size_t largest) {
  std::vector<Case> cases;
  for (CollectiveAlgorithm a : collective_algorithms())
    for (size_t count : test_counts(n, largest))
      for (bool in_place : {false, true}) {
        cases.push_back({a, count, in_place, kDefaultSegmentBytes});
        if (a == CollectiveAlgorithm::native) continue;
        if (count <= 1001) cases.push_back({a, count, in_place, 12});
        if (count == 100003) cases.push_back({a, count, in_place, 4096});
      }
  return cases;
}

}  // namespace dp::testing
