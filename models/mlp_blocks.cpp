// The MLP's blocks, forward and backward side by side: [ReLU ->] Linear, and the head's loss.
#include "models/mlp_blocks.h"

#include <fmt/format.h>

#include <algorithm>

namespace dp {

std::vector<int64_t> DenseLayout::slice_rows(int64_t slice_floats) const {
  const int64_t per_slice = slice_floats > 0 ? std::max<int64_t>(1, slice_floats / in) : out;
  const int64_t slices = (out + per_slice - 1) / per_slice;
  std::vector<int64_t> rows;
  for (int64_t j = 0; j <= slices; ++j) rows.push_back(out * j / slices);  // even slices
  return rows;
}

int64_t DenseLayout::slice_end(const std::vector<int64_t>& rows, size_t j) const {
  return j + 2 == rows.size() ? end() : w_offset + rows[j + 1] * in;
}

std::vector<ParamRange> dense_hook_ranges(const DenseLayout& d, int64_t slice_floats) {
  std::vector<ParamRange> ranges;
  const auto rows = d.slice_rows(slice_floats);
  for (size_t j = 0; j + 1 < rows.size(); ++j) {
    const int64_t begin = d.w_offset + rows[j] * d.in;
    ranges.push_back({begin, d.slice_end(rows, j) - begin});
  }
  return ranges;
}

DenseLayout dense_of(const BlockShape& s) {
  return {s.in_floats, s.param_count / (s.in_floats + 1), s.param_offset};  // w (out, in) and b (out)
}

namespace {

// [ReLU ->] Linear. With relu_in, the block reads the previous Linear's output z and computes relu(z)
// into scratch for its matmul, in forward and again in backward, so it keeps nothing but its input.
class LinearBlock : public Block {
 public:
  LinearBlock(BlockShape shape, DenseLayout d, bool relu_in, Scratch& scratch, const Kernels& k)
      : Block(std::move(shape)), d_(d), relu_in_(relu_in), scratch_(scratch), k_(k) {}

  // Its Linear's, whole or slice by slice as backward announces them.
  std::vector<ParamRange> hook_ranges(int64_t slice_floats) const override {
    return dense_hook_ranges(d_, slice_floats);
  }

  StepStats forward(const ParamWindow& w, const BlockData& d, float, const BlockHooks& h) override {
    ActivationCarve c = scratch_.carve(d.n, relu_in_ ? d_.in : 0);
    linear(w, input(d.x, d.n, c), d.y, d.n, h);
    return {};
  }

  void backward(const ParamWindow& w, const BlockData& d, const float* dy, float* dx, bool accumulate,
                const BlockHooks& h) override {
    const bool relu_grad = relu_in_ && dx;
    ActivationCarve c = scratch_.carve(d.n, (relu_in_ ? d_.in : 0) + (relu_grad ? d_.in : 0));
    const float* a = input(d.x, d.n, c);
    float* da = relu_grad ? c.take(d_.in) : dx;
    const auto rows = d_.slice_rows(h.slice_floats);
    if (rows.size() == 2) {
      k_.linear_backward(a, w.p(d_.w_offset), dy, da, w.g(d_.w_offset), w.g(d_.b_offset()), d.n, d_.in, d_.out,
                         accumulate);
      h.ready(d_.w_offset);
    } else {
      // The bias first (the last slice holds it), then slice by slice, last to first: its weights'
      // gradient and its share of da (the last read of its weights, which may be updated once announced).
      k_.linear_bias_grad(dy, w.g(d_.b_offset()), d.n, d_.out, accumulate);
      for (size_t j = rows.size() - 1; j-- > 0;) {
        k_.linear_weight_grad_rows(a, dy, w.g(d_.w_offset), d.n, d_.in, d_.out, rows[j], rows[j + 1], accumulate);
        if (da) k_.linear_input_grad_rows(dy, w.p(d_.w_offset), da, d.n, d_.in, d_.out, rows[j], rows[j + 1],
                                          /*accumulate=*/j + 2 < rows.size());
        h.ready(d_.w_offset + rows[j] * d_.in);
      }
    }
    if (relu_in_ && dx) k_.relu_backward(d.x, da, dx, d.n * d_.in);  // relu(z) > 0 exactly where z > 0
  }

 protected:
  // y = a w^T + b, whole or slice by slice as the parameters arrive (the bias with the last slice).
  void linear(const ParamWindow& w, const float* a, float* y, int64_t n, const BlockHooks& h) {
    const auto rows = d_.slice_rows(h.slice_floats);
    if (rows.size() == 2) {
      h.needed(d_.end());
      k_.linear_forward(a, w.p(d_.w_offset), w.p(d_.b_offset()), y, n, d_.in, d_.out);
      return;
    }
    for (size_t j = 0; j + 1 < rows.size(); ++j) {
      h.needed(d_.slice_end(rows, j));
      k_.linear_forward_rows(a, w.p(d_.w_offset), y, n, d_.in, d_.out, rows[j], rows[j + 1]);
    }
    k_.linear_add_bias(w.p(d_.b_offset()), y, n, d_.out);
  }
  // The Linear's input: x, or relu(x) in the call's scratch.
  const float* input(const float* x, int64_t n, ActivationCarve& c) {
    if (!relu_in_) return x;
    float* act = c.take(d_.in);
    k_.relu_forward(x, act, n * d_.in);
    return act;
  }

  DenseLayout d_;
  bool relu_in_;
  Scratch& scratch_;
  const Kernels& k_;
};

// ReLU -> Linear -> softmax cross-entropy: forward keeps loss_scale * d(loss)/d(logits) as its saved
// activations; backward runs the Linear's backward from them.
class HeadBlock final : public LinearBlock {
 public:
  HeadBlock(BlockShape shape, DenseLayout d, bool relu_in, Scratch& scratch, const Kernels& k)
      : LinearBlock(std::move(shape), d, relu_in, scratch, k) {}

  StepStats forward(const ParamWindow& w, const BlockData& d, float loss_scale, const BlockHooks& h) override {
    ActivationCarve c = scratch_.carve(d.n, (relu_in_ ? d_.in : 0) + d_.out);
    const float* a = input(d.x, d.n, c);
    float* logits = c.take(d_.out);
    linear(w, a, logits, d.n, h);
    const cpu::LossSums s =
        k_.softmax_cross_entropy(logits, d.targets, d.saved, d.n, d_.out, d.saved ? loss_scale : 1.0f);
    return {s.loss, s.correct, d.n};
  }

  void backward(const ParamWindow& w, const BlockData& d, const float*, float* dx, bool accumulate,
                const BlockHooks& h) override {
    LinearBlock::backward(w, d, d.saved, dx, accumulate, h);
  }
};

}  // namespace

std::vector<DenseLayout> mlp_layout(const std::vector<int64_t>& widths) {
  std::vector<DenseLayout> layout;
  int64_t offset = 0;
  for (size_t l = 0; l + 1 < widths.size(); ++l) {
    layout.push_back({widths[l], widths[l + 1], offset});
    offset = layout.back().end();
  }
  return layout;
}

std::vector<BlockShape> mlp_block_shapes(const std::vector<DenseLayout>& layout) {
  std::vector<BlockShape> shapes;
  for (size_t l = 0; l < layout.size(); ++l) {
    const DenseLayout& d = layout[l];
    const bool head = l + 1 == layout.size(), relu_in = l > 0;
    BlockShape s;
    s.name = fmt::format("fc{}", l + 1);
    s.kind = head ? "head" : relu_in ? "relu_linear" : "linear";
    s.param_offset = d.w_offset;
    s.param_count = d.end() - d.w_offset;
    s.in_floats = d.in;
    s.out_floats = head ? 0 : d.out;
    s.saved_floats = head ? d.out : 0;  // the head keeps its loss gradient
    // relu(x) and its gradient in backward; relu(x) and the logits in the head's forward.
    s.scratch_floats = std::max(relu_in ? 2 * d.in : 0, head ? (relu_in ? d.in : 0) + d.out : 0);
    s.eval_scratch_floats = (relu_in ? d.in : 0) + (head ? d.out : 0);
    const double matmul = 2.0 * double(d.in) * double(d.out);
    if (relu_in) s.layers.push_back({fmt::format("relu{}", l), "relu", d.w_offset, 0, d.in, double(d.in)});
    s.layers.push_back({s.name, "linear", d.w_offset, s.param_count, d.out, matmul});
    s.forward_flops = layers_flops(s.layers);
    // Weights' gradient, and the input's except in the first block (nobody needs the data's gradient).
    s.backward_flops = matmul * (l == 0 ? 1 : 2) + (relu_in ? 2.0 * double(d.in) : 0.0);
    shapes.push_back(std::move(s));
  }
  return shapes;
}

std::vector<std::unique_ptr<Block>> make_mlp_blocks(const std::vector<DenseLayout>& layout,
                                                    const std::vector<BlockShape>& shapes, Scratch& scratch,
                                                    const Kernels& k) {
  std::vector<std::unique_ptr<Block>> blocks;
  for (size_t l = 0; l < layout.size(); ++l) {
    const bool head = l + 1 == layout.size(), relu_in = l > 0;
    if (head) blocks.push_back(std::make_unique<HeadBlock>(shapes[l], layout[l], relu_in, scratch, k));
    else blocks.push_back(std::make_unique<LinearBlock>(shapes[l], layout[l], relu_in, scratch, k));
  }
  return blocks;
}

}  // namespace dp
