// Character-level text: strict UTF-8 decoding with line:column errors, gzip and plain files, vocabulary
// and split sizes, windows through gather_batch, the bigram entropy baseline, and the real Jargon File.
#define BOOST_TEST_MODULE data_text
#include <boost/test/unit_test.hpp>

#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "lib/core/error.h"
#include "lib/data/dataset.h"
#include "lib/data/loaders.h"

namespace fs = std::filesystem;

namespace {

// A scratch folder removed at the end of each test.
struct TempDir {
  fs::path dir;
  TempDir() {
    dir = fs::temp_directory_path() /
          ("dptrain_text_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
    fs::create_directories(dir);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  static int& counter() {
    static int c = 0;
    return c;
  }
  std::string plain(const std::string& name, const std::string& bytes) const {
    const std::string p = (dir / name).string();
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  std::string gzip(const std::string& name, const std::string& bytes) const {
    const std::string p = (dir / name).string();
    gzFile f = gzopen(p.c_str(), "wb");
    BOOST_REQUIRE(f);
    if (!bytes.empty()) BOOST_REQUIRE(gzwrite(f, bytes.data(), unsigned(bytes.size())) == int(bytes.size()));
    gzclose(f);
    return p;
  }
};

dp::DataSection text_section(const std::string& path, int64_t context = 4, double val_fraction = 0.25) {
  dp::DataSection d;
  d.dataset = dp::DatasetKind::text;
  d.path = path;
  d.context = context;
  d.val_fraction = val_fraction;
  return d;
}

// The DataError load_text throws (or fails the test).
dp::DataError load_error(const dp::DataSection& d) {
  try {
    dp::load_text(d);
  } catch (const dp::DataError& e) {
    BOOST_TEST_MESSAGE(e.line());
    return e;
  }
  BOOST_FAIL("no DataError for " + d.path);
  return dp::DataError("", "");
}

std::string repeat(const std::string& s, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += s;
  return out;
}

std::u32string decoded(const dp::Dataset& d) {
  std::u32string s;
  for (int32_t t : d.text) s += d.vocab[size_t(t)];
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(ascii_text_vocabulary_and_splits) {
  TempDir tmp;
  const std::string text = repeat("the cat sat on the mat.\n", 10);  // 240 characters
  const auto s = dp::load_text(text_section(tmp.plain("a.txt", text), 8, 0.25));
  // Vocabulary: the sorted distinct characters.
  const std::u32string expected_vocab = U"\n .acehmnost";
  BOOST_TEST((std::u32string(s.train.vocab.begin(), s.train.vocab.end()) == expected_vocab));
  BOOST_TEST(s.test.vocab == s.train.vocab);
  for (const dp::Dataset* d : {&s.train, &s.test}) {
    BOOST_TEST(d->name == "text");
    BOOST_TEST(d->classes == int64_t(expected_vocab.size()));
    BOOST_TEST(d->context == 8);
    BOOST_TEST(d->features == 0);
    BOOST_TEST(d->shape().is_text());
  }
  // Train: the first 180 characters, validation the last 60; windows of 9 that overlap by one token.
  BOOST_TEST(s.train.text.size() == 180u);
  BOOST_TEST(s.test.text.size() == 60u);
  BOOST_TEST(s.train.count == (180 - 1) / 8);
  BOOST_TEST(s.test.count == (60 - 1) / 8);
  std::u32string all = decoded(s.train) + decoded(s.test);
  BOOST_TEST((all == std::u32string(text.begin(), text.end())));
}

BOOST_AUTO_TEST_CASE(multibyte_characters_are_single_tokens) {
  TempDir tmp;
  // 1-, 2-, 3- and 4-byte characters: a, é (U+00E9), € (U+20AC), 😀 (U+1F600), and the largest, U+10FFFF.
  const std::string unit = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xF4\x8F\xBF\xBF\n";  // 6 characters, 15 bytes
  const auto s = dp::load_text(text_section(tmp.plain("u.txt", repeat(unit, 20)), 5, 0.5));
  const std::vector<char32_t> vocab{U'\n', U'a', U'\u00E9', U'\u20AC', U'\U0001F600', U'\U0010FFFF'};
  BOOST_TEST((s.train.vocab == vocab));
  BOOST_TEST(s.train.text.size() + s.test.text.size() == 120u);
  BOOST_TEST((decoded(s.train).substr(0, 6) == U"a\u00E9\u20AC\U0001F600\U0010FFFF\n"));
  // The sequence is periodic: every character has one successor, so the bigram entropy is 0.
  BOOST_TEST(s.train.bigram_entropy == 0.0);
}

BOOST_AUTO_TEST_CASE(gzip_and_plain_files_load_the_same) {
  TempDir tmp;
  const std::string text = repeat("Gr\xC3\xBC\xC3\x9F" "e aus K\xC3\xB6ln, 1\xE2\x82\xAC.\n", 30);
  const auto a = dp::load_text(text_section(tmp.plain("t.txt", text), 16, 0.1));
  const auto b = dp::load_text(text_section(tmp.gzip("t.txt.gz", text), 16, 0.1));
  BOOST_TEST(a.train.text == b.train.text);
  BOOST_TEST(a.test.text == b.test.text);
  BOOST_TEST((a.train.vocab == b.train.vocab));
  BOOST_TEST(a.train.bigram_entropy == b.train.bigram_entropy);
  BOOST_TEST(a.train.count == b.train.count);
}

BOOST_AUTO_TEST_CASE(invalid_utf8_reports_line_and_column) {
  TempDir tmp;
  // Line 3 holds x é € y before the bad bytes: column 5 in characters, byte offset 3 + 3 + 7 = 13.
  const std::string prefix = "ab\ncd\nx\xC3\xA9\xE2\x82\xACy";
  struct Case {
    const char* name;
    std::string bad;
    const char* says;
  };
  const std::vector<Case> cases{
      {"stray continuation byte", "\x80", "continuation byte"},
      {"overlong 2-byte", "\xC0\xAF", "overlong"},
      {"overlong 2-byte (0xc1)", "\xC1\xBF", "overlong"},
      {"overlong 3-byte", "\xE0\x80\xAF", "overlong"},
      {"overlong 4-byte", "\xF0\x80\x80\xAF", "overlong"},
      {"high surrogate", "\xED\xA0\x80", "surrogate"},
      {"low surrogate", "\xED\xBF\xBF", "surrogate"},
      {"above U+10FFFF", "\xF4\x90\x80\x80", "above U+10FFFF"},
      {"lead byte 0xf5", "\xF5\x80\x80\x80", "U+10FFFF"},
      {"byte 0xff", "\xFF", "never appears"},
      {"truncated 2-byte", "\xC3" "A", "truncated 2-byte"},
      {"truncated 3-byte", "\xE2\x82" "A", "truncated 3-byte"},
      {"truncated 4-byte", "\xF0\x9F\x98" "A", "truncated 4-byte"},
  };
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT(c.name) {
      const std::string path = tmp.plain("bad.txt", prefix + c.bad + repeat("more text\n", 10));
      const dp::DataError e = load_error(text_section(path));
      BOOST_TEST(e.where() == path + ":3:5");
      BOOST_TEST(e.message().find("byte offset 13") != std::string::npos, e.message());
      BOOST_TEST(e.message().find(c.says) != std::string::npos, e.message());
      BOOST_TEST(!e.hint().empty());
    }
  }
  // A sequence cut off by the end of the file, and an error on line 1 column 1, in a gzip file.
  const dp::DataError end = load_error(text_section(tmp.plain("end.txt", repeat("x", 50) + "\n\xE2\x82")));
  BOOST_TEST(end.where().ends_with(":2:1"));
  BOOST_TEST(end.message().find("byte offset 51") != std::string::npos);
  BOOST_TEST(end.message().find("end of file") != std::string::npos);
  const std::string gz = tmp.gzip("first.txt.gz", "\xFE" + repeat("x", 50));
  BOOST_TEST(load_error(text_section(gz)).where() == gz + ":1:1");
}

BOOST_AUTO_TEST_CASE(empty_short_and_missing_files) {
  TempDir tmp;
  BOOST_TEST(load_error(text_section(tmp.plain("empty.txt", ""))).message().find("empty") != std::string::npos);
  BOOST_TEST(load_error(text_section(tmp.gzip("empty.gz", ""))).message().find("empty") != std::string::npos);
  // context 4: each split needs 5 characters. 19 characters, val_fraction 0.25: 14 + 5 loads; 15 does not
  // (11 + 4).
  BOOST_TEST(dp::load_text(text_section(tmp.plain("ok.txt", repeat("x", 19)))).test.count == 1);
  const dp::DataError shortish = load_error(text_section(tmp.plain("short.txt", repeat("x", 15))));
  BOOST_TEST(shortish.message().find("too short") != std::string::npos);
  const dp::DataError missing = load_error(text_section((tmp.dir / "nope.txt").string()));
  BOOST_TEST(missing.where() == (tmp.dir / "nope.txt").string());
  BOOST_TEST(missing.message().find("not found") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(windows_through_gather_batch) {
  TempDir tmp;
  std::string text;
  for (int i = 0; i < 300; ++i) text += char('a' + (i * 7 + i / 13) % 26);
  const auto s = dp::load_text(text_section(tmp.plain("w.txt", text), 10, 0.2));
  const dp::Dataset& d = s.train;
  BOOST_TEST(d.count == (240 - 1) / 10);
  const std::vector<uint32_t> indices{3, 0, uint32_t(d.count - 1)};
  dp::BatchBuffer buf;
  const dp::Batch b = dp::gather_batch(d, indices, buf);
  BOOST_TEST(b.n == 3);
  BOOST_TEST(b.x == nullptr);
  for (size_t i = 0; i < indices.size(); ++i)
    for (int64_t t = 0; t < 10; ++t) {
      const size_t at = size_t(indices[i]) * 10 + size_t(t);
      BOOST_TEST(b.tokens[i * 10 + size_t(t)] == d.text[at]);
      BOOST_TEST(b.targets[i * 10 + size_t(t)] == d.text[at + 1]);  // the next character
      if (t + 1 < 10) BOOST_TEST(b.targets[i * 10 + size_t(t)] == b.tokens[i * 10 + size_t(t) + 1]);
    }
}

BOOST_AUTO_TEST_CASE(bigram_entropy_of_hand_computable_texts) {
  TempDir tmp;
  // Alternating: each character determines the next. H = 0.
  auto h = [&](const std::string& text, double val_fraction) {
    const auto s = dp::load_text(text_section(tmp.plain("h.txt", text), 4, val_fraction));
    BOOST_TEST(s.test.bigram_entropy == s.train.bigram_entropy);
    return s.train.bigram_entropy;
  };
  BOOST_TEST(h(repeat("ab", 100), 0.25) == 0.0);
  // Train = "aab" x 100 (val_fraction 0.25 of 400 characters): pairs aa x100, ab x100, ba x99.
  // 'a' is followed by a or b equally, 'b' always by a: H = (200 log 2) / 299.
  BOOST_TEST(h(repeat("aab", 133) + "a", 0.25) == 200.0 * std::log(2.0) / 299.0, boost::test_tools::tolerance(1e-12));
  // Train = "abc" x 100 then "acb" x 100 (val_fraction 0.5 of two copies), 599 pairs: a->b 100, a->c 100;
  // b->c 100, b->a 99; c->a 99 + 1 (the seam between the halves), c->b 100.
  const std::string abc = repeat("abc", 100) + repeat("acb", 100);
  const double expect = -(100 * std::log(100.0 / 200) + 100 * std::log(100.0 / 200) +  // a -> b, c
                          100 * std::log(100.0 / 199) + 99 * std::log(99.0 / 199) +    // b -> c, a
                          100 * std::log(100.0 / 200) + 100 * std::log(100.0 / 200)) / // c -> a, b
                        599.0;
  BOOST_TEST(h(abc + abc, 0.5) == expect, boost::test_tools::tolerance(1e-12));
  // A large vocabulary (2000 CJK characters in a fixed cycle): still deterministic, H = 0.
  std::string cjk;
  for (int r = 0; r < 3; ++r)
    for (char32_t c = 0x4E00; c < 0x4E00 + 2000; ++c) {
      cjk += char(0xE0 | (c >> 12));
      cjk += char(0x80 | ((c >> 6) & 0x3F));
      cjk += char(0x80 | (c & 0x3F));
    }
  const auto big = dp::load_text(text_section(tmp.plain("cjk.txt", cjk), 16, 0.3));
  BOOST_TEST(big.train.classes == 2000);
  BOOST_TEST(big.train.bigram_entropy == 0.0);
}

// The precondition of the case on the real text (tests/main_with_skips.cpp: skipped, not passed).
boost::test_tools::assertion_result jargon_text_installed(boost::unit_test::test_unit_id) {
  const char* const file = "/usr/share/doc/jargon-text/jargon.txt.gz";
  boost::test_tools::assertion_result installed(fs::exists(file));
  installed.message() << "Debian's jargon-text is not installed (no " << file << ")";
  return installed;
}

BOOST_AUTO_TEST_CASE(the_jargon_file, *boost::unit_test::precondition(jargon_text_installed)) {
  const auto start = std::chrono::steady_clock::now();
  const auto s = dp::load_text(text_section("", 128, 0.1));  // empty path: the Debian package's file
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const size_t total = s.train.text.size() + s.test.text.size();
  BOOST_TEST_MESSAGE("Jargon File: " << total << " characters, vocabulary " << s.train.classes
                                     << ", bigram entropy " << s.train.bigram_entropy << " nats/char, "
                                     << s.train.count << " train / " << s.test.count << " val windows, loaded in "
                                     << seconds << " s");
  BOOST_TEST(total > 1'000'000u);
  BOOST_TEST(s.train.classes > 60);
  BOOST_TEST(s.train.classes < 400);
  BOOST_TEST(s.test.text.size() == size_t(std::llround(double(total) * 0.1)));
  BOOST_TEST(s.train.count == (int64_t(s.train.text.size()) - 1) / 128);
  BOOST_TEST(s.train.bigram_entropy > 1.5);
  BOOST_TEST(s.train.bigram_entropy < 3.5);
  // The load time is printed, not asserted: machines differ 3-4x in speed (tests/README.md).
}
