// Fashion-MNIST from its gzip IDX files (Debian's dataset-fashion-mnist package by default): locating,
// validating and normalising both splits.
#include <array>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "lib/core/error.h"
#include "lib/data/idx.h"
#include "lib/data/files.h"
#include "lib/data/loaders.h"

namespace dp {
namespace {

constexpr int64_t kRows = 28, kCols = 28, kClasses = 10;
// Per-pixel mean and standard deviation of the Fashion-MNIST training images scaled to [0, 1].
constexpr double kFashionMnistMean = 0.2860, kFashionMnistStd = 0.3530;
const char* const kInstallHint =
    "install Debian's dataset-fashion-mnist package (apt-get install dataset-fashion-mnist) or set "
    "[data] path to the folder holding the IDX files";

}  // namespace

std::string fashion_mnist_dir(const std::string& path) {
  if (!path.empty()) return path;
  std::error_code ec;
  if (std::filesystem::is_directory(kFashionMnistDefaultDir, ec)) return kFashionMnistDefaultDir;
  const std::string file = "/train-images-idx3-ubyte.gz";
  const std::string listed = dpkg_listed_file("dataset-fashion-mnist", {file});
  return listed.empty() ? kFashionMnistDefaultDir : listed.substr(0, listed.size() - file.size());
}

Dataset load_fashion_mnist_split(const std::string& dir, const std::string& split) {
  const std::string images_path = dir + "/" + split + "-images-idx3-ubyte.gz";
  const std::string labels_path = dir + "/" + split + "-labels-idx1-ubyte.gz";
  for (const auto& p : {images_path, labels_path}) {
    std::error_code ec;
    if (!std::filesystem::exists(p, ec))
      throw DataError(p, "Fashion-MNIST file not found", kInstallHint);
  }
  const IdxFile images = read_idx(images_path, 3);
  const IdxFile labels = read_idx(labels_path, 1);
  if (images.dims[1] != kRows || images.dims[2] != kCols)
    throw DataError(images_path, fmt::format("images are {}x{}, expected {}x{}", images.dims[1],
                                             images.dims[2], kRows, kCols));
  if (images.dims[0] != labels.dims[0])
    throw DataError(labels_path, fmt::format("{} labels for {} images in {}", labels.dims[0],
                                             images.dims[0], images_path),
                    "the image and label files come from different splits or versions");

  Dataset d;
  d.name = "fashion-mnist";
  d.count = images.dims[0];
  d.features = kRows * kCols;
  d.channels = 1;
  d.height = kRows;
  d.width = kCols;
  d.classes = kClasses;
  d.y.resize(size_t(d.count));
  for (int64_t i = 0; i < d.count; ++i) {
    const uint8_t label = labels.data[size_t(i)];
    if (label >= kClasses)
      throw DataError(labels_path, fmt::format("label {} of sample {} is not below {}", label, i, kClasses),
                      "the file is damaged or not a Fashion-MNIST label file");
    d.y[size_t(i)] = label;
  }
  std::array<float, 256> lut;
  for (int v = 0; v < 256; ++v)
    lut[size_t(v)] = float((v / 255.0 - kFashionMnistMean) / kFashionMnistStd);
  d.x.resize(images.data.size());
  for (size_t i = 0; i < images.data.size(); ++i) d.x[i] = lut[images.data[i]];
  return d;
}

DatasetSplits load_fashion_mnist(const std::string& path) {
  const std::string dir = fashion_mnist_dir(path);
  DatasetSplits s;
  s.train = load_fashion_mnist_split(dir, "train");
  s.test = load_fashion_mnist_split(dir, "t10k");
  return s;
}

}  // namespace dp
