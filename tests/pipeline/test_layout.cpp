// The layout of a mini-batch over a pipeline (lib/pipeline/layout.h): micro-batches cover the mini-batch
// in order and are never empty, replicas take the planned shares of a full micro-batch exactly and
// proportional rows of a short one, and a boundary's pieces cover every row once, each inside the rows
// of the replica that sends it and of the one that receives it.
#define BOOST_TEST_MODULE pipeline_layout
#include <boost/test/unit_test.hpp>

#include <numeric>
#include <random>

#include "lib/pipeline/layout.h"

using namespace dp::pipeline;

namespace {

int64_t total(const std::vector<Rows>& rows) {
  int64_t sum = 0, at = 0;
  for (const Rows& r : rows) {
    BOOST_TEST(r.begin == at);  // contiguous, in order
    at = r.end();
    sum += r.count;
  }
  return sum;
}

}  // namespace

BOOST_AUTO_TEST_CASE(micro_batches_cover_the_mini_batch) {
  BOOST_TEST((micro_batch_rows(10, 4) == std::vector<Rows>{{0, 3}, {3, 3}, {6, 2}, {8, 2}}));
  BOOST_TEST((micro_batch_rows(3, 8) == std::vector<Rows>{{0, 1}, {1, 1}, {2, 1}}));  // never empty
  for (int64_t b = 1; b <= 70; ++b)
    for (int64_t m = 1; m <= 9; ++m) BOOST_TEST(total(micro_batch_rows(b, m)) == b);
}

BOOST_AUTO_TEST_CASE(replicas_take_their_planned_shares) {
  const std::vector<int64_t> shares = {5, 2, 9};
  const auto full = replica_rows(16, shares);
  for (size_t i = 0; i < shares.size(); ++i) BOOST_TEST(full[i].count == shares[i]);
  const auto short_one = replica_rows(8, shares);  // half a micro-batch: about half of each share
  BOOST_TEST(total(short_one) == 8);
  BOOST_TEST(short_one[2].count >= 4);
  BOOST_TEST(total(replica_rows(1, shares)) == 1);  // some replicas get nothing
  BOOST_TEST(total(replica_rows(0, shares)) == 0);
  BOOST_TEST((replica_rows(7, {3}) == std::vector<Rows>{{0, 7}}));
}

BOOST_AUTO_TEST_CASE(pieces_cover_every_row_once_within_both_sides) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t n = 1 + rng() % 40;
    std::vector<int64_t> a(1 + rng() % 4), b(1 + rng() % 4);
    for (auto& x : a) x = 1 + rng() % 9;
    for (auto& x : b) x = 1 + rng() % 9;
    const auto from = replica_rows(n, a), to = replica_rows(n, b);
    const auto pieces = boundary_pieces(from, to);
    int64_t at = 0;
    for (const Piece& p : pieces) {
      BOOST_TEST(p.rows.begin == at);
      BOOST_TEST(p.rows.count > 0);
      at = p.rows.end();
      BOOST_TEST(p.rows.begin >= from[size_t(p.from)].begin);
      BOOST_TEST(p.rows.end() <= from[size_t(p.from)].end());
      BOOST_TEST(p.rows.begin >= to[size_t(p.to)].begin);
      BOOST_TEST(p.rows.end() <= to[size_t(p.to)].end());
    }
    BOOST_TEST(at == n);
  }
  // Two replicas handing to three: {0,6} {6,10} -> {0,4} {4,8} {8,10}.
  const auto p = boundary_pieces({{0, 6}, {6, 4}}, {{0, 4}, {4, 4}, {8, 2}});
  BOOST_TEST((p == std::vector<Piece>{{0, 0, {0, 4}}, {0, 1, {4, 2}}, {1, 1, {6, 2}}, {1, 2, {8, 2}}}));
}
