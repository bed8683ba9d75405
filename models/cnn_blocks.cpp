// The CNN's blocks, forward and backward side by side (cnn_blocks.h).
#include "models/cnn_blocks.h"

#include <algorithm>

namespace dp {
namespace {

double conv_flops(const cpu::ConvShape& s) {
  return 2.0 * double(s.in_channels * 9) * double(s.out_channels * s.out_height() * s.out_width());
}

// conv3x3 -> norm -> ReLU. Saved: the conv's output, the norm's mean and rstd per sample.
class PlainUnit final : public Block {
 public:
  PlainUnit(BlockShape s, ConvLayout conv, NormLayout norm, bool first, Buffer<float>& ws, Scratch& scratch,
            const Kernels& k)
      : Block(std::move(s)), conv_(conv), norm_(norm), first_(first), ws_(ws), scratch_(scratch), k_(k) {}

  StepStats forward(const ParamWindow& w, const BlockData& d, float, const BlockHooks& h) override {
    h.needed(shape().param_offset + shape().param_count);
    ActivationCarve c = d.saved ? ActivationCarve{d.saved, d.n} : scratch_.carve(d.n, shape().saved_floats);
    float *c1 = c.take(out()), *mean = c.take(1), *rstd = c.take(1);
    conv_.shape.n = d.n;
    k_.conv2d_forward(conv_.shape, d.x, w.p(conv_.w_offset), w.p(conv_.b_offset), c1, ws_.data());
    k_.norm2d_forward(c1, w.p(norm_.g_offset), w.p(norm_.b_offset), d.y, mean, rstd, d.n, norm_.channels,
                      norm_.spatial, /*relu=*/true);
    return {};
  }

  void backward(const ParamWindow& w, const BlockData& d, const float* dy, float* dx, bool accumulate,
                const BlockHooks& h) override {
    ActivationCarve c{d.saved, d.n};
    const float *c1 = c.take(out()), *mean = c.take(1), *rstd = c.take(1);
    float* t = scratch_.floats(d.n * out());
    conv_.shape.n = d.n;
    k_.norm2d_backward(c1, w.p(norm_.g_offset), mean, rstd, dy, d.y, t, w.g(norm_.g_offset), w.g(norm_.b_offset),
                       d.n, norm_.channels, norm_.spatial, accumulate);
    k_.conv2d_backward(conv_.shape, d.x, w.p(conv_.w_offset), t, first_ ? nullptr : dx, w.g(conv_.w_offset),
                       w.g(conv_.b_offset), ws_.data(), accumulate);
    h.ready(shape().param_offset);
  }

 private:
  int64_t out() const { return shape().out_floats; }

  ConvLayout conv_;
  NormLayout norm_;
  bool first_;
  Buffer<float>& ws_;
  Scratch& scratch_;
  const Kernels& k_;
};

// conv3x3 -> norm -> ReLU -> conv3x3 -> norm, + the input, ReLU. Saved: c1, h1 = ReLU(norm1(c1)), c2 and
// both norms' statistics.
class ResidualUnit final : public Block {
 public:
  ResidualUnit(BlockShape s, ConvLayout c1, NormLayout n1, ConvLayout c2, NormLayout n2, Buffer<float>& ws,
               Scratch& scratch, const Kernels& k)
      : Block(std::move(s)), conv1_(c1), conv2_(c2), norm1_(n1), norm2_(n2), ws_(ws), scratch_(scratch), k_(k) {}

  StepStats forward(const ParamWindow& w, const BlockData& d, float, const BlockHooks& h) override {
    h.needed(shape().param_offset + shape().param_count);
    const int64_t size = shape().out_floats;
    ActivationCarve c = d.saved ? ActivationCarve{d.saved, d.n} : scratch_.carve(d.n, shape().saved_floats);
    float *c1 = c.take(size), *h1 = c.take(size), *c2 = c.take(size);
    float *mean1 = c.take(1), *rstd1 = c.take(1), *mean2 = c.take(1), *rstd2 = c.take(1);
    conv1_.shape.n = conv2_.shape.n = d.n;
    k_.conv2d_forward(conv1_.shape, d.x, w.p(conv1_.w_offset), w.p(conv1_.b_offset), c1, ws_.data());
    k_.norm2d_forward(c1, w.p(norm1_.g_offset), w.p(norm1_.b_offset), h1, mean1, rstd1, d.n, norm1_.channels,
                      norm1_.spatial, /*relu=*/true);
    k_.conv2d_forward(conv2_.shape, h1, w.p(conv2_.w_offset), w.p(conv2_.b_offset), c2, ws_.data());
    k_.norm2d_forward(c2, w.p(norm2_.g_offset), w.p(norm2_.b_offset), d.y, mean2, rstd2, d.n, norm2_.channels,
                      norm2_.spatial, /*relu=*/false);
    k_.add(d.y, d.x, d.y, d.n * size);  // + the block's input, then ReLU
    k_.relu_forward(d.y, d.y, d.n * size);
    return {};
  }

  void backward(const ParamWindow& w, const BlockData& d, const float* dy, float* dx, bool accumulate,
                const BlockHooks& h) override {
    const int64_t size = shape().out_floats, count = d.n * size;
    ActivationCarve c{d.saved, d.n};
    const float *c1 = c.take(size), *h1 = c.take(size), *c2 = c.take(size);
    const float *mean1 = c.take(1), *rstd1 = c.take(1), *mean2 = c.take(1), *rstd2 = c.take(1);
    ActivationCarve t = scratch_.carve(d.n, 3 * size);
    float *dsum = t.take(size), *t1 = t.take(size), *t2 = t.take(size);
    conv1_.shape.n = conv2_.shape.n = d.n;
    // y = ReLU(norm2(c2) + x): dsum is the gradient of the sum, shared by both branches.
    k_.relu_backward(d.y, dy, dsum, count);
    k_.norm2d_backward(c2, w.p(norm2_.g_offset), mean2, rstd2, dsum, nullptr, t1, w.g(norm2_.g_offset),
                       w.g(norm2_.b_offset), d.n, norm2_.channels, norm2_.spatial, accumulate);
    k_.conv2d_backward(conv2_.shape, h1, w.p(conv2_.w_offset), t1, t2, w.g(conv2_.w_offset), w.g(conv2_.b_offset),
                       ws_.data(), accumulate);
    k_.norm2d_backward(c1, w.p(norm1_.g_offset), mean1, rstd1, t2, h1, t2, w.g(norm1_.g_offset),
                       w.g(norm1_.b_offset), d.n, norm1_.channels, norm1_.spatial, accumulate);
    k_.conv2d_backward(conv1_.shape, d.x, w.p(conv1_.w_offset), t2, t1, w.g(conv1_.w_offset), w.g(conv1_.b_offset),
                       ws_.data(), accumulate);
    if (dx) k_.add(dsum, t1, dx, count);  // the skip connection's gradient plus the branch's
    h.ready(shape().param_offset);
  }

 private:
  ConvLayout conv1_, conv2_;
  NormLayout norm1_, norm2_;
  Buffer<float>& ws_;
  Scratch& scratch_;
  const Kernels& k_;
};

// Global average pooling -> linear -> softmax cross-entropy. Saved: the pooled features and
// loss_scale * d(loss)/d(logits).
class CnnHead final : public Block {
 public:
  CnnHead(BlockShape s, int64_t channels, int64_t spatial, int64_t classes, int64_t w_offset, Scratch& scratch,
          const Kernels& k)
      : Block(std::move(s)), c_(channels), spatial_(spatial), classes_(classes), w_offset_(w_offset),
        scratch_(scratch), k_(k) {}

  StepStats forward(const ParamWindow& w, const BlockData& d, float loss_scale, const BlockHooks& h) override {
    ActivationCarve c = scratch_.carve(d.n, classes_ + (d.saved ? 0 : c_));
    float* logits = c.take(classes_);
    float* pooled = d.saved ? d.saved : c.take(c_);
    k_.global_avg_pool_forward(d.x, pooled, d.n, c_, spatial_);
    h.needed(shape().param_offset + shape().param_count);
    k_.linear_forward(pooled, w.p(w_offset_), w.p(b_offset()), logits, d.n, c_, classes_);
    float* dlogits = d.saved ? d.saved + d.n * c_ : nullptr;
    const cpu::LossSums s =
        k_.softmax_cross_entropy(logits, d.targets, dlogits, d.n, classes_, dlogits ? loss_scale : 1.0f);
    return {s.loss, s.correct, d.n};
  }

  void backward(const ParamWindow& w, const BlockData& d, const float*, float* dx, bool accumulate,
                const BlockHooks& h) override {
    float* dpooled = scratch_.floats(d.n * c_);
    k_.linear_backward(d.saved, w.p(w_offset_), d.saved + d.n * c_, dpooled, w.g(w_offset_), w.g(b_offset()), d.n,
                       c_, classes_, accumulate);
    h.ready(w_offset_);
    if (dx) k_.global_avg_pool_backward(dpooled, dx, d.n, c_, spatial_);
  }

 private:
  int64_t b_offset() const { return w_offset_ + classes_ * c_; }
  int64_t c_, spatial_, classes_, w_offset_;
  Scratch& scratch_;
  const Kernels& k_;
};

// The layers of the model's layer table (models/block.h).
LayerInfo conv_layer(const std::string& name, const ConvLayout& c) {
  const int64_t out = c.shape.out_channels * c.shape.out_height() * c.shape.out_width();
  return {name, "conv", c.w_offset, c.b_offset + c.shape.out_channels - c.w_offset, out, conv_flops(c.shape)};
}
// A norm keeps only its statistics for backward (it reads its input, the conv output, again).
LayerInfo norm_layer(const std::string& name, const NormLayout& n) {
  return {name, "norm", n.g_offset, 2 * n.channels, 2, 5.0 * double(n.channels * n.spatial)};
}
// A layer without parameters, after those ending at `at`.
LayerInfo plain_layer(const std::string& name, const char* kind, int64_t at, int64_t activations, double flops) {
  return {name, kind, at, 0, activations, flops};
}

BlockShape unit_shape(const std::string& name, const char* kind, int64_t first_offset, int64_t end,
                      const ConvLayout& conv) {
  BlockShape s;
  s.name = name;
  s.kind = kind;
  s.param_offset = first_offset;
  s.param_count = end - first_offset;
  s.in_floats = conv.shape.in_channels * conv.shape.height * conv.shape.width;
  s.out_floats = conv.shape.out_channels * conv.shape.out_height() * conv.shape.out_width();
  return s;
}

}  // namespace

BlockShape plain_unit_shape(const std::string& name, const ConvLayout& conv, const NormLayout& norm, bool first) {
  const int64_t end = norm.b_offset + norm.channels;
  BlockShape s = unit_shape(name, "conv_norm_relu", conv.w_offset, end, conv);
  s.layers = {conv_layer(name + ".conv", conv), norm_layer(name + ".norm", norm),
              plain_layer(name + ".relu", "relu", end, s.out_floats, double(s.out_floats))};
  s.saved_floats = s.out_floats + 2;
  s.scratch_floats = s.out_floats;
  s.eval_scratch_floats = s.saved_floats;  // forward keeps its saved activations in scratch
  s.forward_flops = layers_flops(s.layers);
  // The conv's input gradient (but in the first block) and weights' gradient, the norm and ReLU twice.
  const double conv_f = conv_flops(conv.shape);
  s.backward_flops = conv_f * (first ? 1 : 2) + 2 * (s.forward_flops - conv_f);
  return s;
}

BlockShape residual_unit_shape(const std::string& name, const ConvLayout& conv1, const NormLayout& norm1,
                               const ConvLayout& conv2, const NormLayout& norm2) {
  const int64_t end = norm2.b_offset + norm2.channels;
  BlockShape s = unit_shape(name, "residual", conv1.w_offset, end, conv1);
  const int64_t size = s.out_floats;
  s.layers = {conv_layer(name + ".conv1", conv1), norm_layer(name + ".norm1", norm1),
              plain_layer(name + ".relu1", "relu", conv2.w_offset, size, double(size)),
              conv_layer(name + ".conv2", conv2), norm_layer(name + ".norm2", norm2),
              plain_layer(name + ".add", "add", end, 0, double(size)),  // writes into relu2's buffer
              plain_layer(name + ".relu2", "relu", end, size, double(size))};
  s.saved_floats = 3 * s.out_floats + 4;
  s.scratch_floats = 3 * s.out_floats;
  s.eval_scratch_floats = s.saved_floats;
  s.forward_flops = layers_flops(s.layers);
  s.backward_flops = 2 * s.forward_flops;  // each conv's input and weights' gradients; the rest twice
  return s;
}

BlockShape cnn_head_shape(int64_t channels, int64_t spatial, int64_t classes, int64_t w_offset) {
  BlockShape s;
  s.name = "head";
  s.kind = "pool_linear_loss";
  s.param_offset = w_offset;
  s.param_count = classes * channels + classes;
  s.in_floats = channels * spatial;
  s.saved_floats = channels + classes;
  s.scratch_floats = std::max(channels, classes);  // the logits in forward, the pooled gradient in backward
  s.eval_scratch_floats = classes + channels;       // the logits and the pooled input
  s.layers = {plain_layer("pool", "pool", w_offset, channels, double(channels * spatial)),
              // with its softmax cross-entropy
              {"fc", "linear", w_offset, s.param_count, classes,
               2.0 * double(channels * classes) + 5.0 * double(classes)}};
  s.forward_flops = layers_flops(s.layers);
  s.backward_flops = double(channels * spatial) + 4.0 * double(channels * classes);
  return s;
}

std::unique_ptr<Block> make_plain_unit(BlockShape s, ConvLayout conv, NormLayout norm, bool first,
                                       Buffer<float>& workspace, Scratch& scratch, const Kernels& k) {
  return std::make_unique<PlainUnit>(std::move(s), conv, norm, first, workspace, scratch, k);
}

std::unique_ptr<Block> make_residual_unit(BlockShape s, ConvLayout conv1, NormLayout norm1, ConvLayout conv2,
                                          NormLayout norm2, Buffer<float>& workspace, Scratch& scratch,
                                          const Kernels& k) {
  return std::make_unique<ResidualUnit>(std::move(s), conv1, norm1, conv2, norm2, workspace, scratch, k);
}

std::unique_ptr<Block> make_cnn_head(BlockShape s, int64_t channels, int64_t spatial, int64_t classes,
                                     int64_t w_offset, Scratch& scratch, const Kernels& k) {
  return std::make_unique<CnnHead>(std::move(s), channels, spatial, classes, w_offset, scratch, k);
}

}  // namespace dp
