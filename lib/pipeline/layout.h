// Where the samples of a mini-batch go in a pipeline run: the micro-batches it is cut into, the rows of
// each micro-batch each replica of a stage takes (in proportion to the planned shares), and the pieces
// that cross each boundary between two stages (which rows a replica of the one sends to a replica of the
// next; gradients travel back along the same pieces). Rows are laid out in rank order on both sides of a
// boundary, as the planner's link cost assumes (plan_internal.h, for_each_overlap). Pure.
#pragma once

#include <cstdint>
#include <vector>

namespace dp::pipeline {

// Rows [begin, begin + count) of a mini-batch or of a micro-batch.
struct Rows {
  int64_t begin = 0, count = 0;
  int64_t end() const { return begin + count; }
  bool operator==(const Rows&) const = default;
};

// A mini-batch of `batch` rows cut into min(micro_batches, batch) micro-batches as equal as possible (the
// first batch % M one row longer): a short last mini-batch of an epoch keeps every micro-batch non-empty.
std::vector<Rows> micro_batch_rows(int64_t batch, int64_t micro_batches);

// The rows of a micro-batch of n rows each replica of a stage takes: in proportion to `weights` (the
// planned shares of a full micro-batch), by largest remainder; replicas may get none when n is small.
std::vector<Rows> replica_rows(int64_t n, const std::vector<int64_t>& weights);

// A piece of a boundary: rows (within the micro-batch) that replica `from` of the sending stage hands to
// replica `to` of the receiving one.
struct Piece {
  int from = 0, to = 0;
  Rows rows;
  bool operator==(const Piece&) const = default;
};
// Every non-empty overlap of the two stages' rows, in row order.
std::vector<Piece> boundary_pieces(const std::vector<Rows>& from, const std::vector<Rows>& to);

}  // namespace dp::pipeline
