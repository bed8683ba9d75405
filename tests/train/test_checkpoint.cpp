// Checkpoint round trip, and every way a checkpoint file can be wrong; sharded checkpoints (parts and a
// manifest) read whole and by range.
#define BOOST_TEST_MODULE checkpoint
#include <boost/test/unit_test.hpp>

#include <zlib.h>

#include <cstring>
#include <iterator>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "lib/core/error.h"
#include "lib/train/checkpoint.h"

namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("dptrain-ckpt-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

dp::Checkpoint sample() {
  dp::Checkpoint c;
  c.model_fingerprint = 0x1234;
  c.optimizer = "adamw";
  c.step = 40;
  c.optimizer_steps = 40;
  for (int i = 0; i < 1000; ++i) c.params.push_back(float(i) * 0.5f);
  for (int i = 0; i < 2000; ++i) c.optimizer_state.push_back(float(-i));
  c.balance_weights = {1.0, 0.4, 0.25};  // I-DAT's division (format version 3)
  return c;
}

void flip_byte(const fs::path& p, std::streamoff offset) {
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(offset);
  char c = 0;
  f.get(c);
  f.seekp(offset);
  f.put(char(c ^ 0x5a));
}

bool mentions(const dp::CheckpointError& e, const std::string& text) {
  return e.line().find(text) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_CASE(round_trip_is_exact) {
  TempDir t;
  const auto path = dp::checkpoint_path(t.path.string(), 40);
  dp::write_checkpoint(path, sample());
  BOOST_TEST(!fs::exists(path + ".tmp"));
  const auto c = dp::read_checkpoint(path);
  const auto s = sample();
  BOOST_TEST(c.model_fingerprint == s.model_fingerprint);
  BOOST_TEST(c.optimizer == "adamw");
  BOOST_TEST(c.step == 40);
  BOOST_TEST(c.params == s.params);
  BOOST_TEST(c.optimizer_state == s.optimizer_state);
  BOOST_TEST(c.balance_weights == s.balance_weights);
}

// A checkpoint of format version 2 (before I-DAT's division was kept) still resumes: the same bytes
// without the division's count, the version and checksums as version 2 wrote them.
BOOST_AUTO_TEST_CASE(version_2_files_are_read) {
  TempDir t;
  const auto path = dp::checkpoint_path(t.path.string(), 40);
  dp::Checkpoint old = sample();
  old.balance_weights.clear();
  dp::write_checkpoint(path, old);
  std::vector<char> bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  bytes.resize(bytes.size() - 8);  // the division's count (0)
  auto put32 = [&](size_t at, uint32_t v) { std::memcpy(bytes.data() + at, &v, 4); };
  put32(8, 2);  // version
  uint64_t payload = 0;
  std::memcpy(&payload, bytes.data() + 72, 8);
  payload -= 8;
  std::memcpy(bytes.data() + 72, &payload, 8);
  put32(80, uint32_t(crc32(0, reinterpret_cast<const Bytef*>(bytes.data() + 88), uInt(bytes.size() - 88))));
  put32(84, uint32_t(crc32(0, reinterpret_cast<const Bytef*>(bytes.data()), 84)));
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
  const auto c = dp::read_checkpoint(path);
  BOOST_TEST(c.params == old.params);
  BOOST_TEST(c.optimizer_state == old.optimizer_state);
  BOOST_TEST(c.balance_weights.empty());
}

BOOST_AUTO_TEST_CASE(corrupted_payload_is_rejected) {
  TempDir t;
  const auto path = dp::checkpoint_path(t.path.string(), 1);
  dp::write_checkpoint(path, sample());
  flip_byte(path, 88 + 4000);
  BOOST_CHECK_EXCEPTION(dp::read_checkpoint(path), dp::CheckpointError,
                        [&](const auto& e) { return mentions(e, "payload checksum") && mentions(e, path); });
}

BOOST_AUTO_TEST_CASE(corrupted_header_is_rejected) {
  TempDir t;
  const auto path = dp::checkpoint_path(t.path.string(), 1);
  dp::write_checkpoint(path, sample());
  flip_byte(path, 40);  // inside step
  BOOST_CHECK_EXCEPTION(dp::read_checkpoint(path), dp::CheckpointError,
                        [](const auto& e) { return mentions(e, "header checksum"); });
}

BOOST_AUTO_TEST_CASE(truncated_file_is_rejected) {
  TempDir t;
  const auto path = dp::checkpoint_path(t.path.string(), 1);
  dp::write_checkpoint(path, sample());
  fs::resize_file(path, fs::file_size(path) - 10);
  BOOST_CHECK_EXCEPTION(dp::read_checkpoint(path), dp::CheckpointError,
                        [](const auto& e) { return mentions(e, "truncated"); });
  fs::resize_file(path, 20);
  BOOST_CHECK_EXCEPTION(dp::read_checkpoint(path), dp::CheckpointError,
                        [](const auto& e) { return mentions(e, "not a dptrain checkpoint"); });
}

BOOST_AUTO_TEST_CASE(other_files_are_rejected) {
  TempDir t;
  const auto path = (t.path / "step-00000001.ckpt").string();
  std::ofstream(path) << std::string(200, 'x');
  BOOST_CHECK_EXCEPTION(dp::read_checkpoint(path), dp::CheckpointError,
                        [](const auto& e) { return mentions(e, "not a dptrain checkpoint"); });
  BOOST_CHECK_THROW(dp::read_checkpoint((t.path / "missing.ckpt").string()), dp::CheckpointError);
}

BOOST_AUTO_TEST_CASE(newer_format_version_is_rejected) {
  TempDir t;
  const auto path = dp::checkpoint_path(t.path.string(), 1);
  dp::write_checkpoint(path, sample());
  flip_byte(path, 8);  // version field
  BOOST_CHECK_EXCEPTION(dp::read_checkpoint(path), dp::CheckpointError,
                        [](const auto& e) { return mentions(e, "format version"); });
}

BOOST_AUTO_TEST_CASE(listing_and_pruning_keep_the_newest) {
  TempDir t;
  for (int step : {5, 100, 20, 1000}) dp::write_checkpoint(dp::checkpoint_path(t.path.string(), step), sample());
  std::ofstream(t.path / "notes.txt") << "not a checkpoint";
  BOOST_TEST(dp::list_checkpoints(t.path.string()).size() == 4u);
  BOOST_TEST(*dp::newest_checkpoint(t.path.string()) == dp::checkpoint_path(t.path.string(), 1000));
  dp::prune_checkpoints(t.path.string(), 2);
  const auto left = dp::list_checkpoints(t.path.string());
  BOOST_TEST(left.size() == 2u);
  BOOST_TEST(left[0] == dp::checkpoint_path(t.path.string(), 100));
  BOOST_TEST(fs::exists(t.path / "notes.txt"));
  BOOST_TEST(!dp::newest_checkpoint((t.path / "none").string()).has_value());
}

// Issue 16's corruption target: a checkpoint truncated at every sixteenth of its length, and one with any
// single byte flipped, anywhere in the file, never loads: every case is a CheckpointError (one line).
BOOST_AUTO_TEST_CASE(every_truncation_and_every_flipped_byte_is_detected) {
  TempDir t;
  const auto good = dp::checkpoint_path(t.path.string(), 7);
  dp::write_checkpoint(good, sample());
  const auto size = std::streamoff(fs::file_size(good));
  const auto bad = (t.path / "step-00000008.ckpt").string();
  int detected = 0, cases = 0;
  for (int k = 0; k < 16; ++k) {
    fs::copy_file(good, bad, fs::copy_options::overwrite_existing);
    fs::resize_file(bad, uintmax_t(size * k / 16));
    ++cases;
    try {
      dp::read_checkpoint(bad);
    } catch (const dp::CheckpointError& e) {
      detected += e.line().find('\n') == std::string::npos;
    }
  }
  for (std::streamoff offset = 0; offset < size; ++offset) {
    fs::copy_file(good, bad, fs::copy_options::overwrite_existing);
    flip_byte(bad, offset);
    ++cases;
    try {
      dp::read_checkpoint(bad);
      BOOST_TEST_MESSAGE("flipped byte " << offset << " loaded");
    } catch (const dp::CheckpointError& e) {
      detected += e.line().find('\n') == std::string::npos;
    }
  }
  BOOST_TEST_MESSAGE(detected << " of " << cases << " corrupt checkpoints detected (" << size << " bytes)");
  BOOST_TEST(detected == cases);
}

// The header of one checkpoint on the payload of another: of another model (the same size and a
// different one), of another strategy (CGP's per-group state and grouping) and of another optimizer.
// Every splice is refused with one line.
BOOST_AUTO_TEST_CASE(headers_swapped_between_models_and_strategies_are_detected) {
  TempDir t;
  std::vector<dp::Checkpoint> kinds(5, sample());
  kinds[1].model_fingerprint = 0x9999;  // another model of the same size
  for (float& p : kinds[1].params) p += 1;
  kinds[2].params.resize(700);  // another model of another size
  kinds[2].optimizer_state.resize(1400);
  kinds[2].model_fingerprint = 0x7777;
  kinds[3].groups = {0, 0, 1, 1};  // strategy "cgp": two groups' states
  kinds[3].optimizer_state.resize(4000, 3.0f);
  kinds[4].optimizer = "sgd";  // another optimizer: one state slot
  kinds[4].optimizer_state.resize(1000);
  std::vector<std::vector<char>> bytes;
  for (size_t i = 0; i < kinds.size(); ++i) {
    const auto path = dp::checkpoint_path(t.path.string(), int64_t(i + 1));
    dp::write_checkpoint(path, kinds[i]);
    std::ifstream in(path, std::ios::binary);
    bytes.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  constexpr size_t kHeader = 88;  // checkpoint.cpp's fixed header
  int detected = 0, cases = 0;
  const auto spliced = (t.path / "step-00000099.ckpt").string();
  for (size_t h = 0; h < kinds.size(); ++h)
    for (size_t p = 0; p < kinds.size(); ++p) {
      if (h == p) continue;
      {
        std::ofstream out(spliced, std::ios::binary | std::ios::trunc);
        out.write(bytes[h].data(), kHeader);
        out.write(bytes[p].data() + kHeader, std::streamsize(bytes[p].size() - kHeader));
      }
      ++cases;
      try {
        dp::read_checkpoint(spliced);
        BOOST_TEST_MESSAGE("header of kind " << h << " on the payload of kind " << p << " loaded");
      } catch (const dp::CheckpointError& e) {
        detected += e.line().find('\n') == std::string::npos;
      }
    }
  BOOST_TEST_MESSAGE(detected << " of " << cases << " spliced checkpoints detected");
  BOOST_TEST(detected == cases);
}

// A sharded checkpoint: three parts of 1000 parameters (two state slots each) and the manifest naming
// them. read_checkpoint assembles what one file would hold; read_checkpoint_manifest reads none of the
// values, and any range reads from the parts that hold it; pruning removes the parts with the manifest;
// a part missing, corrupted, of another step, or a manifest whose parts leave parameters uncovered is
// refused naming the file.
BOOST_AUTO_TEST_CASE(sharded_checkpoints_read_whole_and_by_range) {
  TempDir t;
  const dp::Checkpoint whole = sample();  // 1000 parameters, 2 slots
  auto write_sharded = [&](const std::string& path, int64_t step, std::vector<int64_t> cuts) {
    dp::Checkpoint m{whole.model_fingerprint, whole.optimizer, step, whole.optimizer_steps, {}, {}, {}, whole.balance_weights,
                     {}, 0, 0, {}};
    m.sharded_params = 1000;
    m.sharded_slots = 2;
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
      const int64_t b = cuts[i], n = cuts[i + 1] - cuts[i];
      std::vector<float> state;
      for (int k = 0; k < 2; ++k)
        state.insert(state.end(), whole.optimizer_state.begin() + k * 1000 + b, whole.optimizer_state.begin() + k * 1000 + b + n);
      m.parts.push_back(dp::write_checkpoint_part(path, int(i), b, std::span(whole.params).subspan(size_t(b), size_t(n)),
                                                  state, 2, m.model_fingerprint, step));
    }
    dp::write_checkpoint(path, m);
  };
  const std::string path = dp::checkpoint_path(t.path.string(), 40);
  write_sharded(path, 40, {0, 300, 301, 1000});
  const dp::Checkpoint read = dp::read_checkpoint(path);
  BOOST_TEST(read.params == whole.params);
  BOOST_TEST(read.optimizer_state == whole.optimizer_state);
  BOOST_TEST(read.balance_weights == whole.balance_weights);
  BOOST_TEST(read.step == 40);
  const dp::Checkpoint manifest = dp::read_checkpoint_manifest(path);
  BOOST_TEST(manifest.params.empty());
  BOOST_TEST(manifest.param_count() == 1000);
  for (const auto& [b, e] : {std::pair{0, 1000}, std::pair{250, 320}, std::pair{300, 301}, std::pair{999, 1000}}) {
    const dp::CheckpointRange r = dp::read_checkpoint_range(manifest, b, e, 2);
    const dp::CheckpointRange inline_r = dp::read_checkpoint_range(read, b, e, 2);  // from the values
    BOOST_TEST(r.params == std::vector<float>(whole.params.begin() + b, whole.params.begin() + e));
    BOOST_TEST(r.state == inline_r.state);
    BOOST_TEST(r.state[size_t(e - b)] == whole.optimizer_state[size_t(1000 + b)]);  // slot 1 follows slot 0
  }
  // Another step's checkpoint, then pruning to one: the older manifest and its parts go.
  write_sharded(dp::checkpoint_path(t.path.string(), 50), 50, {0, 1000});
  dp::prune_checkpoints(t.path.string(), 1);
  BOOST_TEST(!fs::exists(path));
  BOOST_TEST(!fs::exists(dp::checkpoint_part_path(path, 0)));
  BOOST_TEST(fs::exists(dp::checkpoint_part_path(dp::checkpoint_path(t.path.string(), 50), 0)));

  const auto refused = [](const std::string& file, const std::string& text) {
    return [file, text](const dp::CheckpointError& e) { return e.where() == file && mentions(e, text); };
  };
  write_sharded(path, 40, {0, 500, 1000});
  const std::string part = dp::checkpoint_part_path(path, 1);
  flip_byte(part, 100);
  BOOST_CHECK_EXCEPTION(dp::read_checkpoint_manifest(path), dp::CheckpointError, refused(part, "checksum mismatch"));
  fs::remove(part);
  BOOST_CHECK_EXCEPTION(dp::read_checkpoint(path), dp::CheckpointError, refused(part, "missing"));
  fs::copy_file(dp::checkpoint_part_path(dp::checkpoint_path(t.path.string(), 50), 0), part);  // another step's
  BOOST_CHECK_EXCEPTION(dp::read_checkpoint(path), dp::CheckpointError, refused(part, "a part of another checkpoint"));
  fs::remove(part);
  write_sharded(path, 40, {0, 500, 900});  // the parts stop at 900 of 1000
  BOOST_CHECK_EXCEPTION(dp::read_checkpoint(path), dp::CheckpointError, refused(path, "does not cover the model"));
}
