// Character-level text for language models: a UTF-8 file (gzip or plain; by default the Jargon File of
// Debian's jargon-text) decoded strictly, tokenised by code point, split into train and validation
// windows, with the train split's character-bigram entropy as a baseline for the loss.
#include <zlib.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "lib/core/error.h"
#include "lib/data/files.h"
#include "lib/data/loaders.h"

namespace dp {
namespace {

constexpr const char* kJargonDefault = "/usr/share/doc/jargon-text/jargon.txt.gz";
const char* const kInstallHint =
    "install Debian's jargon-text package (apt-get install jargon-text) or set [data] path to a UTF-8 "
    "text file";
const char* const kDamagedHint = kDamagedFileHint;
const char* const kUtf8Hint = "the file must be UTF-8 text; convert it with iconv -t UTF-8";
constexpr char32_t kMaxCodePoint = 0x10FFFF;

// The whole file, decompressed when it is gzip (gzread passes plain files through).
std::string read_file(const std::string& path, bool user_path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw DataError(path, "text file not found",
                    user_path ? "check [data] path (a UTF-8 text file, plain or gzip)" : kInstallHint);
  if (std::filesystem::is_directory(path, ec))
    throw DataError(path, "is a folder, not a text file", "set [data] path to a UTF-8 text file");
  // In memory: the bytes, then a 4-byte token per character.
  const int64_t available = check_data_file(path, 5, "set [data] path to a UTF-8 text file, plain or gzip");
  errno = 0;
  GzPtr f(gzopen(path.c_str(), "rb"));
  if (!f)
    throw DataError(path, fmt::format("cannot open: {}", errno ? std::strerror(errno) : "out of memory"));
  gzbuffer(f.get(), 1u << 20);
  std::string out;
  constexpr unsigned kChunk = 1u << 20;
  for (;;) {
    const size_t at = out.size();
    out.resize(at + kChunk);
    const int n = gzread(f.get(), out.data() + at, kChunk);
    if (n < 0) throw DataError(path, gz_message(f.get(), path), kDamagedHint);
    out.resize(at + size_t(n));
    if (available >= 0 && int64_t(out.size()) * 5 > available)
      throw DataError(path, fmt::format("decompresses to more than {} MiB: with its tokens, more than this "
                                        "machine's available memory", out.size() >> 20),
                      "use a smaller text file");
    if (n == 0) {
      // A gzip stream cut short reports a (non-fatal) buffer error at the end of input.
      int code = 0;
      gzerror(f.get(), &code);
      if (code != Z_OK && code != Z_STREAM_END) throw DataError(path, gz_message(f.get(), path), kDamagedHint);
      break;
    }
  }
  return out;
}

std::string text_path(const std::string& path) {
  if (!path.empty()) return path;
  std::error_code ec;
  if (std::filesystem::exists(kJargonDefault, ec)) return kJargonDefault;
  const std::string listed = dpkg_listed_file("jargon-text", {"/jargon.txt.gz", "/jargon.txt"});
  if (listed.empty()) throw DataError(kJargonDefault, "the Jargon File is not installed", kInstallHint);
  return listed;
}

[[noreturn]] void bad_utf8(const std::string& path, const std::string& bytes, size_t offset, int64_t line,
                           int64_t col, const std::string& what) {
  throw DataError(fmt::format("{}:{}:{}", path, line, col),
                  fmt::format("invalid UTF-8 at byte offset {} (byte 0x{:02x}): {}", offset,
                              uint8_t(bytes[offset]), what),
                  kUtf8Hint);
}

// Strict UTF-8 decoding (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF, no
// truncated sequences. Errors name the first bad sequence by line:column (in characters) and byte offset.
std::vector<char32_t> decode_utf8(const std::string& path, const std::string& bytes) {
  std::vector<char32_t> out;
  out.reserve(bytes.size());
  const auto* s = reinterpret_cast<const uint8_t*>(bytes.data());
  const size_t n = bytes.size();
  size_t i = 0;
  int64_t line = 1;
  size_t line_start_char = 0;  // index in `out` of the current line's first character
  auto fail = [&](size_t at, const std::string& what) {
    bad_utf8(path, bytes, at, line, int64_t(out.size() - line_start_char) + 1, what);
  };
  while (i < n) {
    const uint8_t b = s[i];
    if (b < 0x80) {
      out.push_back(b);
      ++i;
      if (b == '\n') {
        ++line;
        line_start_char = out.size();
      }
      continue;
    }
    int len = 0;
    char32_t cp = 0, min = 0;
    if (b >= 0xC2 && b <= 0xDF) { len = 2; cp = b & 0x1F; min = 0x80; }
    else if (b >= 0xE0 && b <= 0xEF) { len = 3; cp = b & 0x0F; min = 0x800; }
    else if (b >= 0xF0 && b <= 0xF4) { len = 4; cp = b & 0x07; min = 0x10000; }
    else if (b >= 0x80 && b <= 0xBF) fail(i, "continuation byte without a lead byte");
    else if (b == 0xC0 || b == 0xC1) fail(i, "overlong encoding (lead byte 0xc0/0xc1)");
    else if (b <= 0xF7) fail(i, "lead byte above 0xf4 starts a code point beyond U+10FFFF");
    else fail(i, "byte never appears in UTF-8");
    for (int k = 1; k < len; ++k) {
      if (i + size_t(k) >= n) fail(i, fmt::format("truncated {}-byte sequence at end of file", len));
      const uint8_t c = s[i + size_t(k)];
      if ((c & 0xC0) != 0x80)
        fail(i, fmt::format("truncated {}-byte sequence (byte {} is 0x{:02x}, not a continuation byte)", len,
                            k + 1, c));
      cp = (cp << 6) | (c & 0x3F);
    }
    if (cp < min) fail(i, fmt::format("overlong encoding of U+{:04X}", uint32_t(cp)));
    if (cp >= 0xD800 && cp <= 0xDFFF) fail(i, fmt::format("UTF-16 surrogate U+{:04X}", uint32_t(cp)));
    if (cp > kMaxCodePoint) fail(i, fmt::format("code point U+{:X} above U+10FFFF", uint32_t(cp)));
    out.push_back(cp);
    i += size_t(len);
  }
  return out;
}

// H(next | current) in nats of the maximum-likelihood character-bigram model of `t` (vocabulary size v):
// -1/P sum_{a,b} c(a,b) log(c(a,b) / c(a)) over the P = |t| - 1 adjacent pairs. O(|t| + v) time.
double bigram_entropy(const std::vector<int32_t>& t, int64_t v) {
  if (t.size() < 2) return 0.0;
  const size_t pairs = t.size() - 1;
  // Bucket the successors by their predecessor (counting sort), then count each bucket densely.
  std::vector<int64_t> start(size_t(v) + 1, 0);
  for (size_t i = 0; i < pairs; ++i) ++start[size_t(t[i]) + 1];
  for (int64_t a = 0; a < v; ++a) start[size_t(a) + 1] += start[size_t(a)];
  std::vector<int32_t> next(pairs);
  std::vector<int64_t> fill(start.begin(), start.end() - 1);
  for (size_t i = 0; i < pairs; ++i) next[size_t(fill[size_t(t[i])]++)] = t[i + 1];
  std::vector<int64_t> count(size_t(v), 0);
  std::vector<int32_t> seen;
  double sum = 0;  // sum of c(a,b) log(c(a,b) / c(a))
  for (int64_t a = 0; a < v; ++a) {
    const int64_t lo = start[size_t(a)], hi = start[size_t(a) + 1];
    if (lo == hi) continue;
    seen.clear();
    for (int64_t k = lo; k < hi; ++k) {
      const int32_t b = next[size_t(k)];
      if (count[size_t(b)]++ == 0) seen.push_back(b);
    }
    const double ca = double(hi - lo);
    for (const int32_t b : seen) {
      const double cab = double(count[size_t(b)]);
      sum += cab * std::log(cab / ca);
      count[size_t(b)] = 0;
    }
  }
  const double h = -sum / double(pairs);
  return h > 0 ? h : 0.0;  // -0.0 for deterministic text
}

Dataset text_split(std::vector<int32_t> tokens, const std::vector<char32_t>& vocab, int64_t context) {
  Dataset d;
  d.name = "text";
  d.features = 0;
  d.classes = int64_t(vocab.size());
  d.context = context;
  d.count = (int64_t(tokens.size()) - 1) / context;
  d.text = std::move(tokens);
  d.vocab = vocab;
  return d;
}

}  // namespace

DatasetSplits load_text(const DataSection& data) {
  const std::string path = text_path(data.path);
  if (data.context < 1)
    throw DataError("[data] context", fmt::format("must be at least 1, got {}", data.context));
  if (!(data.val_fraction > 0 && data.val_fraction < 1))
    throw DataError("[data] val_fraction", fmt::format("must be in (0, 1), got {}", data.val_fraction));
  const std::string bytes = read_file(path, !data.path.empty());
  if (bytes.empty()) throw DataError(path, "the text file is empty", "set [data] path to a non-empty UTF-8 text file");
  const std::vector<char32_t> chars = decode_utf8(path, bytes);

  // Vocabulary: the distinct code points in increasing order; token = index in it.
  std::vector<uint8_t> present(size_t(kMaxCodePoint) + 1, 0);
  for (const char32_t c : chars) present[c] = 1;
  std::vector<char32_t> vocab;
  std::vector<int32_t> index(present.size(), -1);
  for (char32_t c = 0; c <= kMaxCodePoint; ++c)
    if (present[c]) {
      index[c] = int32_t(vocab.size());
      vocab.push_back(c);
    }

  // Train: the first (1 - val_fraction) of the characters; validation: the rest.
  const int64_t total = int64_t(chars.size());
  const int64_t val_len = std::llround(double(total) * data.val_fraction);
  const int64_t train_len = total - val_len;
  const int64_t window = data.context + 1;
  if (train_len < window || val_len < window)
    throw DataError(path,
                    fmt::format("too short: {} characters split into {} for training and {} for validation "
                                "(val_fraction {}), but each split needs at least one window of context + 1 "
                                "= {} characters",
                                total, train_len, val_len, data.val_fraction, window),
                    "use a longer text, or lower [data] context");

  std::vector<int32_t> train(static_cast<size_t>(train_len)), val(static_cast<size_t>(val_len));
  for (int64_t i = 0; i < train_len; ++i) train[size_t(i)] = index[chars[size_t(i)]];
  for (int64_t i = 0; i < val_len; ++i) val[size_t(i)] = index[chars[size_t(train_len + i)]];
  const double h = bigram_entropy(train, int64_t(vocab.size()));

  DatasetSplits s;
  s.train = text_split(std::move(train), vocab, data.context);
  s.test = text_split(std::move(val), vocab, data.context);
  s.train.bigram_entropy = s.test.bigram_entropy = h;
  return s;
}

}  // namespace dp
