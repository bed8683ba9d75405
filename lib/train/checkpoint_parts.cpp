// Sharded checkpoints (checkpoint.h): part files and the manifest that names them.
//
// A part (little-endian): magic "DPTRPART", u32 version 1, u32 slots, i64 begin, i64 end, u64 fingerprint,
// i64 step, u32 values_crc32, u32 header_crc32 (over the preceding header bytes); then the parameters
// [begin, end) and their optimizer state (slots x (end - begin), slot major).
// The manifest: checkpoint.cpp's header (version 4; param_count, state_count: the whole model's) and a
// payload of u64 group count, i32 groups, u64 weight count, f64 weights (as version 3), u32 slots, u64 part
// count, and per part: i64 begin, i64 end, u64 bytes, u32 crc, u32 name length, the name.
#include <fcntl.h>

#include <filesystem>
#include <vector>

#include "lib/train/checkpoint_internal.h"

namespace dp {
namespace checkpoint_detail {
namespace {

constexpr char kPartMagic[8] = {'D', 'P', 'T', 'R', 'P', 'A', 'R', 'T'};

#pragma pack(push, 1)
struct PartHeader {
  char magic[8];
  uint32_t version, slots;
  int64_t begin, end;
  uint64_t fingerprint;
  int64_t step;
  uint32_t values_crc, header_crc;
};
#pragma pack(pop)
static_assert(sizeof(PartHeader) == 56);

const char* kPartHint = "the checkpoint is incomplete: resume from an older checkpoint (move this one aside), or start "
                        "without --resume";

// Appends the bytes of `v` to `out`.
template <class T>
void put(std::vector<char>& out, const T& v) {
  const size_t at = out.size();
  out.resize(at + sizeof v);
  std::memcpy(out.data() + at, &v, sizeof v);
}

// Reads values of `T` from a payload, refusing to read past its end.
class PayloadReader {
 public:
  PayloadReader(const std::vector<char>& bytes, const std::string& path) : bytes_(bytes), path_(path) {}
  template <class T>
  T get() {
    T v{};
    take(&v, sizeof v);
    return v;
  }
  void take(void* out, uint64_t n) {
    if (n > bytes_.size() - at_)
      throw CheckpointError(path_, "inconsistent manifest sizes: the checkpoint is corrupted", kPartHint);
    std::memcpy(out, bytes_.data() + at_, n);
    at_ += n;
  }
  bool done() const { return at_ == bytes_.size(); }

 private:
  const std::vector<char>& bytes_;
  const std::string& path_;
  size_t at_ = 0;
};

// Checks part `p` of the manifest at `path` whole: its file there, its header, its size and its values'
// checksum (read in pieces, never held whole). Throws CheckpointError naming the part's file.
void verify_part(const std::string& path, const Header& h, int slots, const CheckpointPart& p) {
  const std::string file = (std::filesystem::path(path).parent_path() / p.file).string();
  std::ifstream in(file, std::ios::binary);
  if (!in) throw CheckpointError(file, "missing: a part of the sharded checkpoint " + path, kPartHint);
  PartHeader ph{};
  in.read(reinterpret_cast<char*>(&ph), sizeof ph);
  const uint64_t values = uint64_t(p.end - p.begin) * uint64_t(1 + slots);
  std::error_code ec;
  if (in.gcount() != std::streamsize(sizeof ph) || std::memcmp(ph.magic, kPartMagic, sizeof kPartMagic) != 0 ||
      crc32_of(&ph, offsetof(PartHeader, header_crc)) != ph.header_crc)
    throw CheckpointError(file, "not a checkpoint part, or its header is corrupted", kPartHint);
  if (ph.begin != p.begin || ph.end != p.end || int(ph.slots) != slots || ph.fingerprint != h.fingerprint ||
      ph.step != h.step || ph.values_crc != p.crc)
    throw CheckpointError(file, fmt::format("a part of another checkpoint (step {}, parameters {}-{}), not of {}",
                                            ph.step, ph.begin, ph.end, path), kPartHint);
  if (std::filesystem::file_size(file, ec) != p.bytes || p.bytes != sizeof ph + values * sizeof(float))
    throw CheckpointError(file, fmt::format("truncated or padded: {} bytes, the manifest says {}",
                                            std::filesystem::file_size(file, ec), p.bytes), kPartHint);
  std::vector<char> piece(size_t(1) << 20);
  uint32_t crc = 0;
  for (uint64_t left = values * sizeof(float); left > 0;) {
    const size_t n = size_t(std::min<uint64_t>(left, piece.size()));
    in.read(piece.data(), std::streamsize(n));
    if (!in) throw CheckpointError(file, "read failed", kPartHint);
    crc = crc32_of(piece.data(), n, crc);
    left -= n;
  }
  if (crc != p.crc) throw CheckpointError(file, "checksum mismatch: the part is corrupted", kPartHint);
}

}  // namespace

void write_durably(const std::string& path, const std::function<void(int fd, const std::string& tmp)>& write) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw RuntimeFailure(tmp, fmt::format("cannot create: {}", std::strerror(errno)), "check the output directory");
  write(fd, tmp);
  if (::fsync(fd) != 0 || ::close(fd) != 0)
    throw RuntimeFailure(tmp, fmt::format("flush failed: {}", std::strerror(errno)), "check free disk space");
  std::filesystem::rename(tmp, path);
  const std::string dir = std::filesystem::path(path).parent_path().string();
  if (const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY); dfd >= 0) {
    ::fsync(dfd);  // make the rename itself durable
    ::close(dfd);
  }
}

void write_manifest(const std::string& path, const Checkpoint& c) {
  std::vector<char> payload;
  put(payload, uint64_t(c.groups.size()));
  for (int g : c.groups) put(payload, int32_t(g));
  put(payload, uint64_t(c.balance_weights.size()));
  for (double w : c.balance_weights) put(payload, w);
  put(payload, uint32_t(c.sharded_slots));
  put(payload, uint64_t(c.parts.size()));
  for (const CheckpointPart& p : c.parts) {
    put(payload, p.begin);
    put(payload, p.end);
    put(payload, p.bytes);
    put(payload, p.crc);
    put(payload, uint32_t(p.file.size()));
    for (char ch : p.file) put(payload, ch);
  }
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kShardedVersion;
  h.header_bytes = sizeof(Header);
  h.fingerprint = c.model_fingerprint;
  std::strncpy(h.optimizer, c.optimizer.c_str(), sizeof h.optimizer - 1);
  h.step = c.step;
  h.optimizer_steps = c.optimizer_steps;
  h.param_count = uint64_t(c.sharded_params);
  h.state_count = uint64_t(c.sharded_params) * uint64_t(c.sharded_slots);
  h.payload_bytes = payload.size();
  h.payload_crc = crc32_of(payload.data(), payload.size());
  h.header_crc = crc32_of(&h, offsetof(Header, header_crc));
  write_durably(path, [&](int fd, const std::string& tmp) {
    write_all(fd, &h, sizeof h, tmp);
    write_all(fd, payload.data(), payload.size(), tmp);
  });
}

Checkpoint read_manifest(const std::string& path, const Header& h, std::ifstream& in) {
  const char* corrupted = "the checkpoint's manifest is corrupted";
  std::error_code ec;
  if (h.payload_bytes > std::filesystem::file_size(path, ec) || h.optimizer[15] != '\0' ||
      std::filesystem::file_size(path, ec) != sizeof(Header) + h.payload_bytes)
    throw CheckpointError(path, std::string("truncated or padded: ") + corrupted, kPartHint);
  std::vector<char> bytes(h.payload_bytes);
  in.read(bytes.data(), std::streamsize(bytes.size()));
  if (!in || crc32_of(bytes.data(), bytes.size()) != h.payload_crc)
    throw CheckpointError(path, std::string("payload checksum mismatch: ") + corrupted, kPartHint);
  PayloadReader r(bytes, path);
  Checkpoint c;
  c.model_fingerprint = h.fingerprint;
  c.optimizer = h.optimizer;
  c.step = h.step;
  c.optimizer_steps = h.optimizer_steps;
  c.sharded_params = int64_t(h.param_count);
  c.path = path;
  const uint64_t groups = r.get<uint64_t>();
  for (uint64_t i = 0; i < groups && i < bytes.size(); ++i) c.groups.push_back(r.get<int32_t>());
  const uint64_t weights = r.get<uint64_t>();
  for (uint64_t i = 0; i < weights && i < bytes.size(); ++i) c.balance_weights.push_back(r.get<double>());
  c.sharded_slots = int(r.get<uint32_t>());
  const uint64_t parts = r.get<uint64_t>();
  int64_t covered = 0;
  for (uint64_t i = 0; i < parts && i < bytes.size(); ++i) {
    CheckpointPart p;
    p.begin = r.get<int64_t>();
    p.end = r.get<int64_t>();
    p.bytes = r.get<uint64_t>();
    p.crc = r.get<uint32_t>();
    const uint32_t name = r.get<uint32_t>();
    if (name > 255 || p.begin != covered || p.end <= p.begin)
      throw CheckpointError(path, std::string("its parts do not cover the parameters in order: ") + corrupted,
                            kPartHint);
    p.file.resize(name);
    r.take(p.file.data(), name);
    if (p.file.find('/') != std::string::npos)
      throw CheckpointError(path, std::string("a part outside its folder: ") + corrupted, kPartHint);
    covered = p.end;
    c.parts.push_back(std::move(p));
  }
  if (!r.done() || covered != c.sharded_params || c.parts.empty() || c.sharded_slots > 8 ||
      h.state_count != h.param_count * uint64_t(c.sharded_slots))
    throw CheckpointError(path, fmt::format("its parts cover parameters 0-{} of {}: the checkpoint does not cover "
                                            "the model", covered, c.sharded_params), kPartHint);
  for (const CheckpointPart& p : c.parts) verify_part(path, h, c.sharded_slots, p);
  return c;
}

void remove_parts(const std::string& path) {
  const std::filesystem::path p(path);
  const std::string prefix = p.filename().string() + ".part-";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(p.parent_path(), ec))
    if (e.path().filename().string().starts_with(prefix)) std::filesystem::remove(e.path(), ec);
}

}  // namespace checkpoint_detail

using namespace checkpoint_detail;

std::string checkpoint_part_path(const std::string& path, int index) { return fmt::format("{}.part-{:04d}", path, index); }

CheckpointPart write_checkpoint_part(const std::string& path, int index, int64_t begin, std::span<const float> params,
                                     std::span<const float> state, int slots, uint64_t fingerprint, int64_t step) {
  DP_CHECK(state.size() == params.size() * size_t(slots), "a part's optimizer state: slots x its parameters");
  PartHeader h{};
  std::memcpy(h.magic, kPartMagic, sizeof kPartMagic);
  h.version = 1;
  h.slots = uint32_t(slots);
  h.begin = begin;
  h.end = begin + int64_t(params.size());
  h.fingerprint = fingerprint;
  h.step = step;
  h.values_crc = crc32_of(params.data(), params.size_bytes());
  h.values_crc = crc32_of(state.data(), state.size_bytes(), h.values_crc);
  h.header_crc = crc32_of(&h, offsetof(PartHeader, header_crc));
  const std::string file = checkpoint_part_path(path, index);
  write_durably(file, [&](int fd, const std::string& tmp) {
    write_all(fd, &h, sizeof h, tmp);
    write_all(fd, params.data(), params.size_bytes(), tmp);
    write_all(fd, state.data(), state.size_bytes(), tmp);
  });
  return {h.begin, h.end, std::filesystem::path(file).filename().string(),
          uint64_t(sizeof h + params.size_bytes() + state.size_bytes()), h.values_crc};
}

CheckpointRange read_checkpoint_range(const Checkpoint& c, int64_t begin, int64_t end, int slots) {
  DP_CHECK(0 <= begin && begin <= end && end <= c.param_count(), "a range of the checkpoint's parameters");
  const int64_t n = end - begin;
  CheckpointRange out{std::vector<float>(size_t(n)), std::vector<float>(size_t(n) * size_t(slots))};
  if (c.parts.empty()) {  // its values are here; the first group's state
    std::copy_n(c.params.begin() + begin, n, out.params.begin());
    const std::span<const float> state = c.group_state();
    const int64_t P = c.param_count();
    for (int k = 0; k < slots; ++k) std::copy_n(state.begin() + k * P + begin, n, out.state.begin() + k * n);
    return out;
  }
  DP_CHECK(slots == 0 || slots == c.sharded_slots, "the checkpoint's optimizer state slots (0: parameters only)");
  for (const CheckpointPart& p : c.parts) {
    const int64_t lo = std::max(begin, p.begin), hi = std::min(end, p.end);
    if (lo >= hi) continue;
    const std::string file = (std::filesystem::path(c.path).parent_path() / p.file).string();
    std::ifstream in(file, std::ios::binary);
    const int64_t count = p.end - p.begin;
    auto read = [&](int64_t value, float* to, int64_t floats) {  // value: index among the part's values
      in.seekg(std::streamoff(sizeof(PartHeader) + uint64_t(value) * sizeof(float)));
      in.read(reinterpret_cast<char*>(to), std::streamsize(floats * int64_t(sizeof(float))));
    };
    read(lo - p.begin, out.params.data() + (lo - begin), hi - lo);
    for (int k = 0; k < slots; ++k) read((1 + k) * count + (lo - p.begin), out.state.data() + k * n + (lo - begin), hi - lo);
    if (!in) throw CheckpointError(file, "read failed", kPartHint);
  }
  return out;
}

}  // namespace dp
