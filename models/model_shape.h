// A model's shape without the model: its blocks' shapes (models/block.h: parameter ranges, activation,
// scratch and FLOPs per sample, the layer table), its parameter count, the buffers it holds besides
// parameters and gradients, and what identifies it (describe, fingerprint), made from [model] and the
// data's sample shape alone. Nothing is allocated, so a model of any size can be sized, planned and
// profiled from its rates (lib/estimate, lib/measure) on a machine that could never hold it.
//
// Each model type computes its layout once, in one function that both its constructor and model_shape()
// call (gpt.h, cnn.h, mlp.h), so the two agree field by field (tests/models/test_model_shape.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernel_table.h"
#include "lib/core/batch.h"
#include "lib/core/param_range.h"
#include "lib/job/job.h"
#include "models/block.h"

namespace dp {

struct ModelShape {
  std::string type;                   // "mlp", "cnn", "gpt"
  std::string describe;               // as Model::describe()
  std::vector<BlockShape> blocks;     // in running order
  int64_t parameters = 0;
  int64_t fixed_floats = 0;           // buffers the built model holds besides parameters and gradients
                                      //   (a CNN's convolution workspace, a GPT head's constant vectors)
  int64_t targets_per_sample = 1;     // Model::targets_per_sample()
  int64_t evaluation_chunk = 0;       // Model::evaluation_chunk()
  std::vector<int64_t> unparameterised_input;  // the input dimensions the fingerprint mixes in

  std::vector<LayerInfo> layers() const;  // the blocks' layers, in order (Model::layers())
  uint64_t fingerprint() const;           // Model::fingerprint()
  double flops_per_sample() const;        // forward (Model::flops_per_sample())
  // The ranges gradient communication's hooks announce, in forward order (Model::hook_ranges() after
  // set_hook_slice(slice_floats)).
  std::vector<ParamRange> hook_ranges(int64_t slice_floats) const;
};

// The shape of the model [model] describes for samples of `shape` on the kernels `k` (a convolution's
// or attention's workspace depends on the backend), as make_model would build it, without its
// parameters. Throws JobError as make_model does for options that do not fit the data or each other.
ModelShape model_shape(const ModelSection& spec, const SampleShape& shape, const Kernels& k = cpu_kernels());

// Refuses (JobError) a model type that cannot read the data (text for anything but a GPT).
void check_model_reads(const ModelSection& spec, const SampleShape& shape);

// FNV-1a over the model type, the input dimensions the parameters do not show, and each layer's kind and
// parameter count: what checkpoints must match (Model::fingerprint).
uint64_t architecture_fingerprint(const std::string& type, const std::vector<int64_t>& unparameterised_input,
                                  const std::vector<LayerInfo>& layers);

}  // namespace dp
