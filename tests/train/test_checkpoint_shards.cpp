// Checkpoints written per shard (lib/train/checkpoint_shards.h), over threads as ranks: replicas that keep
// MRA-style shards of the optimizer state (each bucket cut among the replicas) or all of it write one
// piece each, the manifest names them in order, and the checkpoint read whole equals the state they kept;
// each rank of another rank count reads back exactly the ranges it would keep; a pipeline's stages (the
// world split into replica groups over ranges of the model) write theirs side by side.
#define BOOST_TEST_MODULE checkpoint_shards
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <filesystem>
#include <mutex>
#include <random>
#include <vector>

#include "lib/comm/collectives.h"
#include "lib/comm/thread_communicator.h"
#include "lib/train/checkpoint_shards.h"

namespace fs = std::filesystem;
using dp::ParamRange;

namespace {

constexpr int kSlots = 2;
constexpr int64_t kParams = 1000;

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("dptrain-shards-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

float param_value(int64_t i) { return 0.25f * float(i) - 3.0f; }
float state_value(int k, int64_t i) { return float(k + 1) * 1000.0f + float(i); }

// Buckets of random sizes covering [0, count), in backward order (as MRA plans them).
std::vector<ParamRange> buckets_of(int64_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<ParamRange> out;
  for (int64_t end = count; end > 0;) {
    const int64_t n = std::min<int64_t>(end, 1 + int64_t(rng() % 180));
    out.push_back({end - n, n});
    end -= n;
  }
  return out;
}

// What replica r of R keeps: its shard of every bucket, or everything.
std::vector<ParamRange> kept_by(const std::vector<ParamRange>& buckets, int64_t count, int R, int r, bool sharded) {
  if (!sharded) return {{0, count}};
  std::vector<ParamRange> out;
  for (const ParamRange& b : buckets)
    if (const dp::ShardRange s = dp::shard_range(size_t(b.count), R, r); s.count > 0)
      out.push_back({b.offset + int64_t(s.offset), int64_t(s.count)});
  return out;
}

// The state of `ranges` (offsets from `begin`), slot major.
std::vector<float> state_of(int64_t begin, const std::vector<ParamRange>& ranges) {
  int64_t kept = 0;
  for (const ParamRange& r : ranges) kept += r.count;
  std::vector<float> out(static_cast<size_t>(kept * kSlots), 0.0f);
  int64_t at = 0;
  for (const ParamRange& r : ranges) {
    for (int k = 0; k < kSlots; ++k)
      for (int64_t i = 0; i < r.count; ++i) out[size_t(k * kept + at + i)] = state_value(k, begin + r.offset + i);
    at += r.count;
  }
  return out;
}

// Every rank of `world` writes its piece of the stage [begin, end) it belongs to (stages: the cuts, the
// ranks divided among them in order), rank 0 the manifest. Returns the manifest's path.
std::string write_run(dp::Communicator& world, const fs::path& dir, const std::vector<int64_t>& cuts, bool sharded,
                      uint64_t seed) {
  const int stages = int(cuts.size()) - 1, per_stage = world.size() / stages;
  const int stage = world.rank() / per_stage;
  const auto replicas = world.split(stage, world.rank());
  const int64_t begin = cuts[size_t(stage)], count = cuts[size_t(stage) + 1] - begin;
  std::vector<float> params(static_cast<size_t>(count), 0.0f);
  for (int64_t i = 0; i < count; ++i) params[size_t(i)] = param_value(begin + i);
  const std::vector<ParamRange> buckets = buckets_of(count, seed + uint64_t(stage));
  const int R = replicas->size();
  const std::vector<float> state = state_of(begin, kept_by(buckets, count, R, replicas->rank(), sharded));
  const dp::ReplicatedState held{begin, params, state, kSlots,
                                 [&](int r) { return kept_by(buckets, count, R, r, sharded); }};
  const std::string path = dp::checkpoint_path(dir.string(), 10);
  const std::optional<dp::CheckpointPart> part = dp::write_replica_part(*replicas, held, path, world.rank(), 77, 10);
  const auto piece = int64_t(dp::shard_range(size_t(count), R, replicas->rank()).count);
  BOOST_TEST((part ? part->end - part->begin : 0) == piece);
  dp::Checkpoint header;
  header.model_fingerprint = 77;
  header.optimizer = "adamw";
  header.step = 10;
  header.sharded_params = kParams;
  header.sharded_slots = kSlots;
  const dp::Checkpoint manifest = dp::gather_manifest(world, part, world.rank(), path, header);
  if (world.rank() == 0) dp::write_checkpoint(path, manifest);
  world.barrier();
  return path;
}

void check_whole(const std::string& path, size_t parts) {
  BOOST_TEST(dp::read_checkpoint_manifest(path).parts.size() == parts);
  const dp::Checkpoint c = dp::read_checkpoint(path);
  BOOST_TEST_REQUIRE(c.params.size() == size_t(kParams));
  bool same = true;
  for (int64_t i = 0; i < kParams; ++i) {
    same = same && c.params[size_t(i)] == param_value(i);
    for (int k = 0; k < kSlots; ++k) same = same && c.optimizer_state[size_t(k * kParams + i)] == state_value(k, i);
  }
  BOOST_TEST(same);
}

}  // namespace

BOOST_AUTO_TEST_CASE(data_replicas_write_a_piece_each_and_any_rank_count_reads_back_its_shards) {
  for (const bool sharded : {true, false})
    for (const int R : {1, 2, 3, 4}) {
      BOOST_TEST_CONTEXT((sharded ? "sharded" : "every replica keeps all") << ", " << R << " replicas") {
        TempDir t;
        std::string path;
        std::mutex m;
        dp::run_thread_ranks(R, [&](dp::Communicator& world) {
          const std::string p = write_run(world, t.path, {0, kParams}, sharded, 5);
          const std::lock_guard lock(m);
          path = p;
        });
        check_whole(path, size_t(R));
        // Resumed on 3 ranks, each reads only its shards.
        const dp::Checkpoint manifest = dp::read_checkpoint_manifest(path);
        const std::vector<ParamRange> buckets = buckets_of(kParams, 9);
        for (int r = 0; r < 3; ++r) {
          const std::vector<ParamRange> kept = kept_by(buckets, kParams, 3, r, true);
          BOOST_TEST(dp::read_kept_state(manifest, 0, kept, kSlots) == state_of(0, kept));
        }
      }
    }
}

BOOST_AUTO_TEST_CASE(pipeline_stages_with_replicas_write_side_by_side) {
  TempDir t;
  std::string path;
  std::mutex m;
  dp::run_thread_ranks(6, [&](dp::Communicator& world) {  // 3 stages of 2 replicas
    const std::string p = write_run(world, t.path, {0, 150, 151, kParams}, true, 3);
    const std::lock_guard lock(m);
    path = p;
  });
  check_whole(path, 5);  // the one-parameter stage: one replica's piece is empty, so it writes none
  const dp::Checkpoint manifest = dp::read_checkpoint_manifest(path);
  const std::vector<ParamRange> stage{{0, 400}};  // another partition: one stage [100, 500), one replica
  BOOST_TEST(dp::read_kept_state(manifest, 100, stage, kSlots) == state_of(100, stage));
}
