// The dataset loaders behind load_dataset (private to lib/data; tests use them directly).
#pragma once

#include <cstdint>
#include <string>

#include "lib/data/dataset.h"

namespace dp {

// Debian's dataset-fashion-mnist folder.
inline constexpr const char* kFashionMnistDefaultDir = "/usr/share/datasets/fashion-mnist";

// The folder holding the Fashion-MNIST IDX files: `path` when set; otherwise the Debian default, or where
// `dpkg -L dataset-fashion-mnist` lists them when the default folder is missing.
std::string fashion_mnist_dir(const std::string& path);

// Loads one split ("train" or "t10k") from `dir`: 28x28 images normalised with the dataset's mean/std.
Dataset load_fashion_mnist_split(const std::string& dir, const std::string& split);
DatasetSplits load_fashion_mnist(const std::string& path);

// Text for language modelling (lib/data/text.cpp): a UTF-8 file (gzip or plain; empty path: the Jargon
// File from Debian's jargon-text) as character tokens, split into train (first part) and val (last
// val_fraction) windows of data.context + 1 tokens. Throws DataError for a missing, empty or non-UTF-8 file.
DatasetSplits load_text(const DataSection& data);

// Gaussian clusters drawn from `seed`: sizes from `data`, train and test from independent streams.
DatasetSplits make_synthetic(const DataSection& data, uint64_t seed);
// The noise standard deviation of make_synthetic for `features` dimensions.
double synthetic_sigma(int64_t features);

}  // namespace dp
