// The IDX reader on small gzip files written here (valid, and broken in each way it must detect), and the
// Fashion-MNIST loader on fake files and, when Debian's package is installed, on the real dataset.
#define BOOST_TEST_MODULE data_idx
#include <boost/test/unit_test.hpp>

#include <zlib.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "lib/core/error.h"
#include "lib/data/dataset.h"
#include "lib/data/idx.h"
#include "lib/data/loaders.h"

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

namespace {

// A fresh temporary folder per test case, removed afterwards.
struct TempDir {
  fs::path dir;
  TempDir() {
    static int counter = 0;
    dir = fs::temp_directory_path() /
          ("dptrain_test_idx_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(dir);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string path(const std::string& name) const { return (dir / name).string(); }
};

Bytes header(uint32_t magic, const std::vector<uint32_t>& dims) {
  Bytes b;
  auto put = [&](uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(uint8_t(v >> s));
  };
  put(magic);
  for (uint32_t d : dims) put(d);
  return b;
}

Bytes idx_bytes(uint32_t magic, const std::vector<uint32_t>& dims, const Bytes& payload) {
  Bytes b = header(magic, dims);
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

void write_gz(const std::string& path, const Bytes& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  BOOST_REQUIRE(f);
  BOOST_REQUIRE_EQUAL(gzwrite(f, bytes.data(), unsigned(bytes.size())), int(bytes.size()));
  BOOST_REQUIRE_EQUAL(gzclose(f), Z_OK);
}

Bytes read_raw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}
void write_raw(const std::string& path, const Bytes& bytes) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

Bytes ramp(size_t n) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = uint8_t(i * 7 + 3);
  return b;
}

// Runs `f`, which must throw DataError naming `path` and containing `text`.
template <class F>
void expect_data_error(F f, const std::string& path, const std::string& text) {
  try {
    f();
    BOOST_ERROR("no DataError for " << path << " (expected \"" << text << "\")");
  } catch (const dp::DataError& e) {
    BOOST_TEST_MESSAGE(e.line());
    BOOST_CHECK_EQUAL(e.where(), path);
    BOOST_CHECK_MESSAGE(e.message().find(text) != std::string::npos,
                        "\"" << e.message() << "\" lacks \"" << text << "\"");
    BOOST_CHECK(e.line().find(path) != std::string::npos);
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(reads_valid_images_and_labels) {
  TempDir t;
  const Bytes pixels = ramp(3 * 4 * 5);
  write_gz(t.path("img.gz"), idx_bytes(0x803, {3, 4, 5}, pixels));
  const dp::IdxFile img = dp::read_idx(t.path("img.gz"), 3);
  BOOST_CHECK_EQUAL(img.magic, 0x803u);
  BOOST_CHECK((img.dims == std::vector<uint32_t>{3, 4, 5}));
  BOOST_CHECK(img.data == pixels);

  write_gz(t.path("lab.gz"), idx_bytes(0x801, {6}, {0, 1, 2, 9, 4, 5}));
  const dp::IdxFile lab = dp::read_idx(t.path("lab.gz"));
  BOOST_CHECK_EQUAL(lab.magic, 0x801u);
  BOOST_CHECK((lab.dims == std::vector<uint32_t>{6}));
  BOOST_CHECK((lab.data == Bytes{0, 1, 2, 9, 4, 5}));

  // Uncompressed IDX reads the same.
  write_raw(t.path("plain"), idx_bytes(0x803, {3, 4, 5}, pixels));
  BOOST_CHECK(dp::read_idx(t.path("plain"), 3).data == pixels);
}

BOOST_AUTO_TEST_CASE(rejects_bad_magic) {
  TempDir t;
  for (uint32_t magic : {0x12345678u, 0x00000903u, 0x01000801u, 0x00000800u, 0x00000805u}) {
    write_gz(t.path("bad.gz"), idx_bytes(magic, {1}, {0}));
    expect_data_error([&] { dp::read_idx(t.path("bad.gz")); }, t.path("bad.gz"), "bad IDX magic");
  }
}

BOOST_AUTO_TEST_CASE(rejects_wrong_dimension_count) {
  TempDir t;
  write_gz(t.path("lab.gz"), idx_bytes(0x801, {4}, {1, 2, 3, 4}));
  expect_data_error([&] { dp::read_idx(t.path("lab.gz"), 3); }, t.path("lab.gz"), "1 dimensions, expected 3");
  write_gz(t.path("zero.gz"), idx_bytes(0x803, {2, 0, 3}, {}));
  expect_data_error([&] { dp::read_idx(t.path("zero.gz"), 3); }, t.path("zero.gz"), "size 0");
}

BOOST_AUTO_TEST_CASE(rejects_truncated_file) {
  TempDir t;
  write_gz(t.path("short.gz"), idx_bytes(0x803, {2, 3, 4}, ramp(20)));
  expect_data_error([&] { dp::read_idx(t.path("short.gz")); }, t.path("short.gz"),
                    "truncated: expected 24 bytes of data, found 20");
  const Bytes h = header(0x803, {2, 3, 4});
  write_gz(t.path("hdr.gz"), Bytes(h.begin(), h.begin() + 9));
  expect_data_error([&] { dp::read_idx(t.path("hdr.gz")); }, t.path("hdr.gz"), "truncated");
  write_gz(t.path("empty.gz"), {});
  expect_data_error([&] { dp::read_idx(t.path("empty.gz")); }, t.path("empty.gz"), "truncated");
  // The compressed stream itself cut short.
  write_gz(t.path("cut.gz"), idx_bytes(0x803, {20, 30, 40}, ramp(24000)));
  Bytes raw = read_raw(t.path("cut.gz"));
  raw.resize(raw.size() / 2);
  write_raw(t.path("cut.gz"), raw);
  expect_data_error([&] { dp::read_idx(t.path("cut.gz")); }, t.path("cut.gz"), "");
}

BOOST_AUTO_TEST_CASE(rejects_trailing_bytes) {
  TempDir t;
  write_gz(t.path("long.gz"), idx_bytes(0x801, {3}, {1, 2, 3, 4}));
  expect_data_error([&] { dp::read_idx(t.path("long.gz")); }, t.path("long.gz"), "trailing data");
}

BOOST_AUTO_TEST_CASE(rejects_corrupted_gzip) {
  TempDir t;
  write_gz(t.path("ok.gz"), idx_bytes(0x803, {20, 30, 40}, ramp(24000)));
  const Bytes good = read_raw(t.path("ok.gz"));
  BOOST_REQUIRE_GT(good.size(), 40u);
  // Flip bytes at several places of the compressed body (after the 10-byte gzip header, before the
  // 8-byte CRC/length trailer), and in the trailer itself: every variant must be rejected.
  const std::vector<size_t> spots = {12, good.size() / 3, good.size() / 2, good.size() - 12,
                                     good.size() - 6, good.size() - 2};
  for (size_t at : spots) {
    Bytes bad = good;
    for (size_t k = at; k < std::min(at + 4, bad.size()); ++k) bad[k] ^= 0x5A;
    write_raw(t.path("bad.gz"), bad);
    BOOST_TEST_MESSAGE("flipped bytes at " << at << " of " << good.size());
    expect_data_error([&] { dp::read_idx(t.path("bad.gz")); }, t.path("bad.gz"), "");
  }
}

BOOST_AUTO_TEST_CASE(rejects_missing_file) {
  TempDir t;
  expect_data_error([&] { dp::read_idx(t.path("nope.gz")); }, t.path("nope.gz"), "cannot open");
}

// ---- Fashion-MNIST loader -----------------------------------------------------------------------------

namespace {
void write_fake_split(const TempDir& t, const std::string& split, uint32_t images, uint32_t labels,
                      uint8_t max_label = 9, uint32_t side = 28) {
  write_gz(t.path(split + "-images-idx3-ubyte.gz"),
           idx_bytes(0x803, {images, side, side}, ramp(size_t(images) * side * side)));
  Bytes lab(labels);
  for (uint32_t i = 0; i < labels; ++i) lab[i] = uint8_t(i % (max_label + 1u));
  lab.back() = max_label;
  write_gz(t.path(split + "-labels-idx1-ubyte.gz"), idx_bytes(0x801, {labels}, lab));
}
}  // namespace

BOOST_AUTO_TEST_CASE(fashion_mnist_loader_on_fake_files) {
  TempDir t;
  write_fake_split(t, "train", 5, 5);
  write_fake_split(t, "t10k", 3, 3);
  dp::DataSection s;
  s.path = t.dir.string();
  const dp::DatasetSplits d = dp::load_dataset(s, 1);
  BOOST_CHECK_EQUAL(d.train.name, "fashion-mnist");
  BOOST_CHECK_EQUAL(d.train.count, 5);
  BOOST_CHECK_EQUAL(d.test.count, 3);
  BOOST_CHECK_EQUAL(d.train.features, 784);
  BOOST_CHECK_EQUAL(d.train.classes, 10);
  BOOST_REQUIRE_EQUAL(d.train.x.size(), 5u * 784);
  const Bytes pixels = ramp(5 * 784);
  for (size_t i : {size_t(0), size_t(100), size_t(3919)})
    BOOST_CHECK_CLOSE(d.train.x[i], (pixels[i] / 255.0 - 0.2860) / 0.3530, 1e-4);
  BOOST_CHECK_EQUAL(d.test.y[2], 9);

  write_fake_split(t, "t10k", 3, 4);
  expect_data_error([&] { dp::load_dataset(s, 1); }, t.path("t10k-labels-idx1-ubyte.gz"), "4 labels for 3");
  write_fake_split(t, "t10k", 3, 3, 10);
  expect_data_error([&] { dp::load_dataset(s, 1); }, t.path("t10k-labels-idx1-ubyte.gz"), "label 10");
  write_fake_split(t, "t10k", 3, 3, 9, 27);
  expect_data_error([&] { dp::load_dataset(s, 1); }, t.path("t10k-images-idx3-ubyte.gz"), "27x27");
  write_gz(t.path("t10k-images-idx3-ubyte.gz"), idx_bytes(0x801, {3}, {1, 2, 3}));
  expect_data_error([&] { dp::load_dataset(s, 1); }, t.path("t10k-images-idx3-ubyte.gz"), "bad IDX magic");
}

BOOST_AUTO_TEST_CASE(fashion_mnist_missing_files_name_the_package) {
  TempDir t;
  dp::DataSection s;
  s.path = t.path("absent");
  try {
    dp::load_dataset(s, 1);
    BOOST_ERROR("no DataError");
  } catch (const dp::DataError& e) {
    BOOST_TEST_MESSAGE(e.line());
    BOOST_CHECK_EQUAL(e.where(), t.path("absent") + "/train-images-idx3-ubyte.gz");
    BOOST_CHECK(e.hint().find("apt-get install dataset-fashion-mnist") != std::string::npos);
    BOOST_CHECK(e.hint().find("[data] path") != std::string::npos);
  }
}

// The precondition of the case on the real dataset (tests/main_with_skips.cpp: skipped, not passed).
boost::test_tools::assertion_result fashion_mnist_installed(boost::unit_test::test_unit_id) {
  const std::string images = dp::fashion_mnist_dir("") + "/train-images-idx3-ubyte.gz";
  boost::test_tools::assertion_result installed(fs::exists(images));
  installed.message() << "Debian's dataset-fashion-mnist is not installed (no " << images << ")";
  return installed;
}

BOOST_AUTO_TEST_CASE(real_fashion_mnist, *boost::unit_test::precondition(fashion_mnist_installed)) {
  const std::string dir = dp::fashion_mnist_dir("");
  const auto start = std::chrono::steady_clock::now();
  const dp::DatasetSplits d = dp::load_dataset(dp::DataSection{}, 1);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  BOOST_TEST_MESSAGE("loaded Fashion-MNIST from " << dir << " in " << seconds << " s");
  BOOST_CHECK_EQUAL(d.train.count, 60000);
  BOOST_CHECK_EQUAL(d.test.count, 10000);
  BOOST_CHECK_EQUAL(d.train.features, 784);
  BOOST_CHECK_EQUAL(d.train.classes, 10);
  BOOST_CHECK_EQUAL(d.train.x.size(), 60000u * 784);
  BOOST_CHECK_EQUAL(d.test.y.size(), 10000u);
  std::vector<int64_t> per_class(10);
  for (const auto* split : {&d.train, &d.test})
    for (int32_t y : split->y) {
      BOOST_REQUIRE(y >= 0 && y < 10);
      ++per_class[size_t(y)];
    }
  for (int64_t c : per_class) BOOST_CHECK_EQUAL(c, 7000);  // 6000 + 1000 of each class
  double sum = 0, sq = 0;
  for (float v : d.train.x) sum += v, sq += double(v) * v;
  const double mean = sum / double(d.train.x.size());
  const double sd = std::sqrt(sq / double(d.train.x.size()) - mean * mean);
  BOOST_TEST_MESSAGE("normalised train x: mean " << mean << ", std " << sd);
  BOOST_CHECK_SMALL(mean, 0.01);
  BOOST_CHECK_SMALL(sd - 1.0, 0.01);
}
