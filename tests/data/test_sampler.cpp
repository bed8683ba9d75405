// The sampler: every sample exactly once per epoch for any (n, global batch, world) and any shares,
// per-epoch permutations that are reproducible and differ across epochs, and rejected bad shares; the
// samples' digest adds up over an epoch's parts.
#define BOOST_TEST_MODULE data_sampler
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <numeric>
#include <vector>

#include "lib/core/error.h"
#include "lib/core/rng.h"
#include "lib/data/dataset.h"

namespace {

// Random shares summing to `batch` (some of them zero) over `world` ranks.
std::vector<int64_t> random_shares(int64_t batch, int world, dp::Rng& rng) {
  std::vector<int64_t> shares(size_t(world), 0);
  for (int64_t i = 0; i < batch; ++i) ++shares[rng.below(uint64_t(world))];
  return shares;
}

// Walks one epoch, collecting every rank's indices; checks each sample 0..n-1 appears exactly once.
void check_exactly_once(int64_t n, int64_t global_batch, int world, bool uneven, uint64_t seed,
                        int64_t epoch) {
  BOOST_TEST_CONTEXT("n " << n << ", global batch " << global_batch << ", world " << world
                          << (uneven ? ", random shares" : ", equal shares") << ", epoch " << epoch) {
    const std::vector<uint32_t> perm = dp::epoch_permutation(n, seed, epoch);
    BOOST_REQUIRE_EQUAL(perm.size(), size_t(n));
    dp::Rng rng(dp::derive_seed(seed, uint64_t(epoch), 99));
    std::vector<int> seen(size_t(n), 0);
    int64_t total = 0;
    uint64_t digest = 0;
    const int64_t steps = dp::steps_per_epoch(n, global_batch);
    BOOST_CHECK_EQUAL(steps, (n + global_batch - 1) / global_batch);
    for (int64_t step = 0; step < steps; ++step) {
      const int64_t batch = dp::step_batch_size(n, global_batch, step);
      BOOST_CHECK_EQUAL(batch, step + 1 < steps ? global_batch : n - (steps - 1) * global_batch);
      const std::vector<int64_t> shares =
          uneven ? random_shares(batch, world, rng) : dp::equal_shares(batch, world);
      int64_t step_total = 0;
      for (int r = 0; r < world; ++r) {
        const auto idx = dp::rank_indices(perm, global_batch, step, shares, r);
        BOOST_CHECK_EQUAL(int64_t(idx.size()), shares[size_t(r)]);
        for (uint32_t i : idx) {
          BOOST_REQUIRE_LT(i, uint32_t(n));
          ++seen[i];
        }
        step_total += int64_t(idx.size());
        digest += dp::samples_digest(idx);
      }
      BOOST_CHECK_EQUAL(step_total, batch);
      total += step_total;
    }
    BOOST_CHECK_EQUAL(total, n);
    BOOST_CHECK(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
    // The ranks' digests add up to every sample's (what tests/cluster/accounting.py checks of a run).
    std::vector<uint32_t> all(static_cast<size_t>(n));
    std::iota(all.begin(), all.end(), 0u);
    BOOST_CHECK_EQUAL(digest, dp::samples_digest(all));
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_sample_once_per_epoch) {
  const std::vector<std::pair<int64_t, int64_t>> sizes = {
      {1, 1}, {10, 10}, {10, 3}, {100, 32}, {1000, 128}, {1001, 128}, {129, 128}, {130, 64},
      {5, 8}, {97, 10}, {64, 7}, {4096, 100}};
  for (auto [n, gb] : sizes)
    for (int world : {1, 2, 3, 4, 5, 7})
      for (bool uneven : {false, true})
        for (int64_t epoch : {0, 3}) check_exactly_once(n, gb, world, uneven, 1234, epoch);
}

// The digest tells a sample read twice or left out, and matches tests/cluster/accounting.py's mix.
BOOST_AUTO_TEST_CASE(samples_digest_sees_a_sample_twice_or_missing) {
  const std::vector<uint32_t> once = {0, 1, 2, 3}, twice = {0, 1, 1, 3}, missing = {0, 1, 3};
  BOOST_CHECK_NE(dp::samples_digest(once), dp::samples_digest(twice));
  BOOST_CHECK_NE(dp::samples_digest(once), dp::samples_digest(missing));
  BOOST_CHECK_EQUAL(dp::samples_digest(std::vector<uint32_t>{}), 0u);
  BOOST_CHECK_EQUAL(dp::samples_digest(std::vector<uint32_t>{0}), 0xe220a8397b1dcdafull);  // splitmix64(0)
}

BOOST_AUTO_TEST_CASE(world_larger_than_last_batch) {
  // 130 samples in batches of 64: the last step has 2 samples for 7 ranks; 5 ranks get nothing.
  const auto perm = dp::epoch_permutation(130, 5, 0);
  const auto shares = dp::equal_shares(dp::step_batch_size(130, 64, 2), 7);
  BOOST_CHECK((shares == std::vector<int64_t>{1, 1, 0, 0, 0, 0, 0}));
  BOOST_CHECK_EQUAL(dp::rank_indices(perm, 64, 2, shares, 0).front(), perm[128]);
  BOOST_CHECK_EQUAL(dp::rank_indices(perm, 64, 2, shares, 1).front(), perm[129]);
  for (int r = 2; r < 7; ++r) BOOST_CHECK(dp::rank_indices(perm, 64, 2, shares, r).empty());
}

BOOST_AUTO_TEST_CASE(contiguous_parts_in_rank_order) {
  const auto perm = dp::epoch_permutation(50, 9, 1);
  const std::vector<int64_t> shares = {3, 0, 5, 2};  // step 1 of batches of 10
  const auto r2 = dp::rank_indices(perm, 10, 1, shares, 2);
  BOOST_CHECK(std::equal(r2.begin(), r2.end(), perm.begin() + 13, perm.begin() + 18));
  const auto r3 = dp::rank_indices(perm, 10, 1, shares, 3);
  BOOST_CHECK(std::equal(r3.begin(), r3.end(), perm.begin() + 18, perm.begin() + 20));
}

BOOST_AUTO_TEST_CASE(equal_shares_and_step_sizes) {
  BOOST_CHECK((dp::equal_shares(10, 3) == std::vector<int64_t>{4, 3, 3}));
  BOOST_CHECK((dp::equal_shares(12, 4) == std::vector<int64_t>{3, 3, 3, 3}));
  BOOST_CHECK((dp::equal_shares(0, 2) == std::vector<int64_t>{0, 0}));
  BOOST_CHECK_EQUAL(dp::steps_per_epoch(1000, 128), 8);
  BOOST_CHECK_EQUAL(dp::steps_per_epoch(1024, 128), 8);
  BOOST_CHECK_EQUAL(dp::step_batch_size(1000, 128, 7), 104);
  BOOST_CHECK_EQUAL(dp::step_batch_size(1024, 128, 7), 128);
  BOOST_CHECK_THROW(dp::step_batch_size(1000, 128, 8), dp::InternalError);
  BOOST_CHECK_THROW(dp::steps_per_epoch(1000, 0), dp::InternalError);
  BOOST_CHECK_THROW(dp::equal_shares(10, 0), dp::InternalError);
}

BOOST_AUTO_TEST_CASE(permutations_per_epoch) {
  const auto a0 = dp::epoch_permutation(1000, 7, 0);
  BOOST_CHECK(a0 == dp::epoch_permutation(1000, 7, 0));
  BOOST_CHECK(a0 != dp::epoch_permutation(1000, 7, 1));
  BOOST_CHECK(a0 != dp::epoch_permutation(1000, 8, 0));
  BOOST_CHECK(dp::epoch_permutation(1000, 7, 1) != dp::epoch_permutation(1000, 7, 2));
  std::vector<uint32_t> identity(1000);
  std::iota(identity.begin(), identity.end(), 0u);
  BOOST_CHECK(a0 != identity);
  auto sorted = a0;
  std::sort(sorted.begin(), sorted.end());
  BOOST_CHECK(sorted == identity);
  // Pinned values: the order must be the same on every machine, compiler and rank count.
  BOOST_CHECK((dp::epoch_permutation(10, 1, 0) == std::vector<uint32_t>{5, 4, 8, 3, 7, 0, 2, 9, 1, 6}));
  BOOST_CHECK((dp::epoch_permutation(10, 1, 1) == std::vector<uint32_t>{1, 7, 4, 6, 8, 5, 0, 3, 9, 2}));
}

BOOST_AUTO_TEST_CASE(bad_shares_throw) {
  const auto perm = dp::epoch_permutation(100, 1, 0);
  const std::vector<int64_t> too_few = {16, 15}, too_many = {16, 17}, negative = {40, -8};
  BOOST_CHECK_THROW(dp::rank_indices(perm, 32, 0, too_few, 0), dp::InternalError);
  BOOST_CHECK_THROW(dp::rank_indices(perm, 32, 0, too_many, 1), dp::InternalError);
  BOOST_CHECK_THROW(dp::rank_indices(perm, 32, 0, negative, 0), dp::InternalError);
  // The last step has 4 samples: shares summing to the full global batch are wrong there.
  const std::vector<int64_t> full = {16, 16}, last = {1, 3};
  BOOST_CHECK_THROW(dp::rank_indices(perm, 32, 3, full, 0), dp::InternalError);
  BOOST_CHECK_EQUAL(dp::rank_indices(perm, 32, 3, last, 1).size(), 3u);
  BOOST_CHECK_THROW(dp::rank_indices(perm, 32, 3, last, 2), dp::InternalError);   // no such rank
  BOOST_CHECK_THROW(dp::rank_indices(perm, 32, 4, last, 0), dp::InternalError);   // no such step
}
