// Parts of sharded checkpoints written by replicas, each its piece, and the kept state read back (see
// checkpoint_shards.h).
#include "lib/train/checkpoint_shards.h"

#include <algorithm>
#include <filesystem>

#include "lib/comm/collectives.h"
#include "lib/core/error.h"
#include "lib/core/memory_meter.h"
#include "lib/train/step/nonfinite.h"

namespace dp {
namespace {

constexpr int kStateTag = 920;  // below kCollectiveTag; the run's other messages are done at a checkpoint

// Where values of one replica's kept state go in another's piece: `count` values from offset `from` of the
// source's state (per slot) to offset `to` of the piece.
struct Segment {
  int64_t from = 0, to = 0, count = 0;
};

ParamRange piece_of(int64_t count, int replicas, int i) {
  const ShardRange r = shard_range(size_t(count), replicas, i);
  return {int64_t(r.offset), int64_t(r.count)};
}

bool covers(const std::vector<ParamRange>& ranges, ParamRange piece) {
  int64_t covered = 0;
  for (const ParamRange& r : ranges)
    covered += std::max<int64_t>(0, std::min(r.end(), piece.end()) - std::max(r.offset, piece.offset));
  return covered == piece.count;
}

// What replica `source` (keeping `kept`) gives to the piece `piece`: the parts of its ranges inside it.
std::vector<Segment> segments(const std::vector<ParamRange>& kept, ParamRange piece) {
  std::vector<Segment> out;
  int64_t at = 0;  // offset of the range in the source's state
  for (const ParamRange& r : kept) {
    const int64_t lo = std::max(r.offset, piece.offset), hi = std::min(r.end(), piece.end());
    if (lo < hi) out.push_back({at + (lo - r.offset), lo - piece.offset, hi - lo});
    at += r.count;
  }
  return out;
}

int64_t values_in(const std::vector<Segment>& segs) {
  int64_t n = 0;
  for (const Segment& s : segs) n += s.count;
  return n;
}

// One rank's part as every rank learns of it (a CheckpointPart without its name: index -1, none).
struct PartRecord {
  int64_t begin = 0, end = 0;
  uint64_t bytes = 0;
  uint32_t crc = 0;
  int32_t index = -1;
};

}  // namespace

std::optional<CheckpointPart> write_replica_part(Communicator& replicas, const ReplicatedState& s,
                                                 const std::string& path, int index, uint64_t fingerprint,
                                                 int64_t step) {
  check_finite_parameters(s.params, step);  // every replica the whole range: all throw, or none
  const int R = replicas.size(), me = replicas.rank();
  const int64_t count = int64_t(s.params.size());
  const std::vector<ParamRange> mine = s.ranges(me);
  int64_t kept = 0;
  for (const ParamRange& r : mine) kept += r.count;
  DP_CHECK(int64_t(s.state.size()) == kept * s.slots, "a replica's optimizer state: slots x the ranges it keeps");
  const ParamRange piece = piece_of(count, R, me);
  // Each value of a piece comes from its own replica when it keeps the whole piece (no sharding), else
  // from the one replica that keeps it (shards are disjoint).
  auto source_segments = [&](int source, int dest, const std::vector<ParamRange>& kept_by_source) {
    const ParamRange p = piece_of(count, R, dest);
    if (source != dest && covers(s.ranges(dest), p)) return std::vector<Segment>{};
    return segments(kept_by_source, p);
  };
  const size_t n = size_t(R);
  std::vector<std::vector<Segment>> from(n), to(n);
  int64_t filled = 0, sent = 0;
  for (int peer = 0; peer < R; ++peer) {
    from[size_t(peer)] = source_segments(peer, me, peer == me ? mine : s.ranges(peer));
    if (peer != me) to[size_t(peer)] = source_segments(me, peer, mine), sent += values_in(to[size_t(peer)]);
    filled += values_in(from[size_t(peer)]);
  }
  DP_CHECK(filled == piece.count, "the replicas' optimizer state covers each piece once");
  const auto write = [&](std::span<const float> state) -> std::optional<CheckpointPart> {
    if (piece.count == 0) return std::nullopt;
    return write_checkpoint_part(path, index, s.begin + piece.offset,
                                 s.params.subspan(size_t(piece.offset), size_t(piece.count)), state, s.slots,
                                 fingerprint, step);
  };
  const std::vector<Segment>& own = from[size_t(me)];
  if (sent == 0 && kept == piece.count && own.size() == 1 && own[0].from == 0 && own[0].to == 0)
    return write(s.state);  // it keeps exactly its piece (one replica): nothing to bring, nothing to copy
  // The piece's state is the one copy a checkpoint adds: each segment travels straight from where its
  // keeper holds it into the piece (one message per segment and slot, posted in the same order on both
  // sides), nothing packed.
  const MemoryUse use("checkpoint staging");
  const CountedBytes counted(piece.count * s.slots * int64_t(sizeof(float)));
  std::vector<float> state(size_t(piece.count) * size_t(s.slots));
  const auto in_piece = [&](int k, const Segment& g) {
    return std::span(state).subspan(size_t(k * piece.count + g.to), size_t(g.count));
  };
  const auto in_kept = [&](int k, const Segment& g) {
    return s.state.subspan(size_t(k * kept + g.from), size_t(g.count));
  };
  std::vector<Request> requests;
  for (int peer = 0; peer < R; ++peer) {
    if (peer == me) continue;
    for (int k = 0; k < s.slots; ++k) {
      for (const Segment& g : from[size_t(peer)])
        requests.push_back(replicas.irecv(std::as_writable_bytes(in_piece(k, g)), peer, kStateTag));
      for (const Segment& g : to[size_t(peer)])
        requests.push_back(replicas.isend(std::as_bytes(in_kept(k, g)), peer, kStateTag));
    }
  }
  for (int k = 0; k < s.slots; ++k)
    for (const Segment& g : own) std::copy_n(in_kept(k, g).begin(), g.count, in_piece(k, g).begin());
  wait_all(requests);
  return write(state);
}

Checkpoint gather_manifest(Communicator& comm, const std::optional<CheckpointPart>& mine, int index,
                           const std::string& path, Checkpoint header) {
  PartRecord record;
  if (mine) record = {mine->begin, mine->end, mine->bytes, mine->crc, index};
  std::vector<PartRecord> all = comm.size() > 1 ? comm.allgather_value(record) : std::vector{record};
  if (comm.rank() != 0) return {};
  std::erase_if(all, [](const PartRecord& r) { return r.index < 0; });
  std::sort(all.begin(), all.end(), [](const PartRecord& a, const PartRecord& b) { return a.begin < b.begin; });
  header.parts.clear();
  for (const PartRecord& r : all)
    header.parts.push_back({r.begin, r.end, std::filesystem::path(checkpoint_part_path(path, r.index)).filename(),
                            r.bytes, r.crc});
  return header;
}

std::vector<float> read_kept_state(const Checkpoint& c, int64_t begin, std::span<const ParamRange> ranges,
                                   int slots) {
  int64_t kept = 0;
  for (const ParamRange& r : ranges) kept += r.count;
  std::vector<float> state(size_t(kept) * size_t(slots));
  int64_t at = 0;
  for (const ParamRange& r : ranges) {
    const CheckpointRange values = read_checkpoint_range(c, begin + r.offset, begin + r.end(), slots);
    for (int k = 0; k < slots; ++k)
      std::copy_n(values.state.begin() + k * r.count, r.count, state.begin() + k * kept + at);
    at += r.count;
  }
  return state;
}

}  // namespace dp
