// The shard layout (cover the buffer in rank order, disjoint, balanced) and the algorithm names.
#define BOOST_TEST_MODULE shard_range
#include <boost/test/unit_test.hpp>

#include "lib/comm/collectives.h"
#include "lib/core/error.h"

BOOST_AUTO_TEST_CASE(shards_tile_the_buffer_in_rank_order_and_are_balanced) {
  for (int ranks = 1; ranks <= 9; ++ranks)
    for (size_t count : {0, 1, 2, 3, 7, 8, 9, 10, 1001, 100003}) {
      size_t next = 0, smallest = count, largest = 0;
      for (int r = 0; r < ranks; ++r) {
        const dp::ShardRange s = dp::shard_range(count, ranks, r);
        BOOST_TEST(s.offset == next);  // contiguous, disjoint, in rank order
        next = s.end();
        smallest = std::min(smallest, s.count);
        largest = std::max(largest, s.count);
        // the first count % ranks ranks hold one more
        BOOST_TEST(s.count == count / size_t(ranks) + (size_t(r) < count % size_t(ranks) ? 1 : 0));
      }
      BOOST_TEST(next == count);  // covers the buffer
      BOOST_TEST(largest - smallest <= 1);
    }
}

BOOST_AUTO_TEST_CASE(shard_examples) {
  BOOST_TEST((dp::shard_range(10, 4, 0) == dp::ShardRange{0, 3}));
  BOOST_TEST((dp::shard_range(10, 4, 1) == dp::ShardRange{3, 3}));
  BOOST_TEST((dp::shard_range(10, 4, 2) == dp::ShardRange{6, 2}));
  BOOST_TEST((dp::shard_range(10, 4, 3) == dp::ShardRange{8, 2}));
  BOOST_TEST((dp::shard_range(2, 5, 4) == dp::ShardRange{2, 0}));
  BOOST_CHECK_THROW(dp::shard_range(10, 4, 4), dp::InternalError);
  BOOST_CHECK_THROW(dp::shard_range(10, 0, 0), dp::InternalError);
}

BOOST_AUTO_TEST_CASE(algorithm_names_round_trip) {
  for (dp::CollectiveAlgorithm a : dp::collective_algorithms())
    BOOST_TEST((dp::parse_collective_algorithm(dp::collective_algorithm_name(a)) == a));
  BOOST_TEST(dp::collective_algorithms().size() == 2u);
  try {
    dp::parse_collective_algorithm("rign");
    BOOST_FAIL("no error");
  } catch (const dp::InputError& e) {
    BOOST_TEST(e.message() == "unknown collective algorithm 'rign'; valid: native, ring");
  }
}
