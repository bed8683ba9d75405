// The production CPU convolution: oneDNN's forward, backward-data and backward-weights primitives, which
// choose their kernels (JIT-compiled for AVX-512, AVX2, ...) from the CPU's instruction set at run time,
// whatever kernel set the BLAS library runs. Built when cmake/Backends.cmake finds oneDNN
// (DPTRAIN_WITH_ONEDNN); otherwise, and for any shape oneDNN declines, the reference in conv_gemm.cpp.
//
// Each primitive takes its tensors in the layout it prefers (format_tag::any: oneDNN's blocked layouts,
// such as 16 channels innermost); the model's NCHW tensors are reordered into and out of those layouts
// around each call (plain NCHW throughout measured 2.3x slower on the example CNN: oneDNN then falls back
// to its GEMM convolution). Primitives, reorders, blocked buffers and scratchpads are built once per
// shape and kept per thread (ranks of the in-process transport are threads, each with its own model).
#include "kernels/cpu/conv.h"

#include <algorithm>

#if DPTRAIN_WITH_ONEDNN
#include <cblas.h>
#include <omp.h>

#include <map>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <tuple>
#include <vector>
#endif

namespace dp::cpu {

#if DPTRAIN_WITH_ONEDNN
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr auto f32 = memory::data_type::f32;

// One tensor argument of one primitive: the caller's plain layout and the one the primitive wants. When
// they differ the argument is staged through a buffer of its own, reordered in (inputs) or out (outputs).
class Staged {
 public:
  Staged() = default;
  Staged(const dnnl::engine& e, const memory::desc& user, const memory::desc& want, bool input)
      : engine_(e), user_(user) {
    if (user == want) return;
    inner_ = memory(want, e);
    move_ = dnnl::reorder(input ? dnnl::reorder::primitive_desc(e, user, e, want)
                                : dnnl::reorder::primitive_desc(e, want, e, user));
  }
  // The memory the primitive reads, holding `data`.
  memory in(dnnl::stream& s, const float* data) {
    memory user(user_, engine_, const_cast<float*>(data));
    if (!inner_) return user;
    move_.execute(s, user, inner_);
    return inner_;
  }
  // The memory the primitive writes; finish() then moves it into `data`.
  memory out(float* data) { return inner_ ? inner_ : memory(user_, engine_, data); }
  void finish(dnnl::stream& s, float* data) {
    if (!inner_) return;
    memory user(user_, engine_, data);
    move_.execute(s, inner_, user);
  }

 private:
  dnnl::engine engine_;
  memory::desc user_;
  memory inner_;  // empty when the layouts agree
  dnnl::reorder move_;
};

struct Plan {
  dnnl::convolution_forward forward;
  dnnl::convolution_backward_data backward_data;
  dnnl::convolution_backward_weights backward_weights;
  Staged fwd_x, fwd_w, fwd_y;          // forward: src, weights, dst
  Staged bd_dy, bd_w, bd_dx;           // backward data: diff_dst, weights, diff_src
  Staged bw_x, bw_dy, bw_dw;           // backward weights: src, diff_dst, diff_weights
  memory fwd_scratch, bd_scratch, bw_scratch;
  std::vector<float> dw_sum, db_sum;   // accumulate: the fresh gradients before they are added
  std::string impl;                    // the forward's implementation, e.g. "jit:avx512_core"
};

using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>;

struct Context {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<Key, std::optional<Plan>> plans;  // nullopt: the reference runs the shape
};

Context& context() {
  thread_local Context c;
  return c;
}

std::optional<Plan> build_plan(const dnnl::engine& e, const ConvShape& s) {
  // One or two input channels (an image's first layer): the reference's single GEMM over a column matrix
  // measured 1.6x faster forward and 2.2x backward than oneDNN on the example CNN's stem
  // (tests/bench/conv_vs_torch.sh).
  if (s.in_channels < 3) return std::nullopt;
  const memory::dims x_dims{s.n, s.in_channels, s.height, s.width},
      w_dims{s.out_channels, s.in_channels, s.kernel, s.kernel}, b_dims{s.out_channels},
      y_dims{s.n, s.out_channels, s.out_height(), s.out_width()}, strides{s.stride, s.stride},
      pad_l{s.pad, s.pad};
  // The padding past the last output that the window reaches (less than `pad` when the stride leaves a
  // remainder): oneDNN wants the output size to follow exactly from it.
  const memory::dims pad_r{(s.out_height() - 1) * s.stride + s.kernel - s.height - s.pad,
                           (s.out_width() - 1) * s.stride + s.kernel - s.width - s.pad};
  const memory::desc x_user(x_dims, f32, Tag::nchw), w_user(w_dims, f32, Tag::oihw), b_md(b_dims, f32, Tag::x),
      y_user(y_dims, f32, Tag::nchw);
  const memory::desc x_any(x_dims, f32, Tag::any), w_any(w_dims, f32, Tag::any), y_any(y_dims, f32, Tag::any);
  try {
    const auto algo = dnnl::algorithm::convolution_direct;
    // Scratchpads held by the plan: left to the library, they are allocated and freed (page faults
    // and all) at every call.
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const dnnl::convolution_forward::primitive_desc fwd(
        {dnnl::prop_kind::forward_training, algo, x_any, w_any, b_md, y_any, strides, pad_l, pad_r}, attr, e);
    const dnnl::convolution_backward_data::primitive_desc bd({algo, x_any, w_any, y_any, strides, pad_l, pad_r},
                                                             attr, e, fwd);
    const dnnl::convolution_backward_weights::primitive_desc bw(
        {algo, x_any, w_any, b_md, y_any, strides, pad_l, pad_r}, attr, e, fwd);
    Plan p;
    p.fwd_scratch = memory(fwd.scratchpad_desc(), e);
    p.bd_scratch = memory(bd.scratchpad_desc(), e);
    p.bw_scratch = memory(bw.scratchpad_desc(), e);
    p.forward = dnnl::convolution_forward(fwd);
    p.backward_data = dnnl::convolution_backward_data(bd);
    p.backward_weights = dnnl::convolution_backward_weights(bw);
    p.fwd_x = Staged(e, x_user, fwd.src_desc(), true);
    p.fwd_w = Staged(e, w_user, fwd.weights_desc(), true);
    p.fwd_y = Staged(e, y_user, fwd.dst_desc(), false);
    p.bd_dy = Staged(e, y_user, bd.diff_dst_desc(), true);
    p.bd_w = Staged(e, w_user, bd.weights_desc(), true);
    p.bd_dx = Staged(e, x_user, bd.diff_src_desc(), false);
    p.bw_x = Staged(e, x_user, bw.src_desc(), true);
    p.bw_dy = Staged(e, y_user, bw.diff_dst_desc(), true);
    p.bw_dw = Staged(e, w_user, bw.diff_weights_desc(), false);
    p.impl = fwd.impl_info_str();
    return p;
  } catch (const dnnl::error&) {
    return std::nullopt;  // unsupported here: the reference runs this shape
  }
}

// Backward of layers with fewer than 16 input channels: oneDNN 2.6 pads them to its 16-channel blocks for
// the input gradient, and the reference, on OpenBLAS's AVX-512 kernels, measured 1.3-2.1x faster there
// (8 channels at 28 x 28, tests/bench/conv_vs_torch.sh); on AVX2 kernels oneDNN stays 1.2-1.4x ahead. The
// choice depends only on the shape and the kernel set, so a run's arithmetic is the same every time.
bool blas_runs_avx512() {
  static const bool avx512 = [] {
    const std::string core = openblas_get_corename();
    return core == "SkylakeX" || core == "Cooperlake" || core == "SapphireRapids";
  }();
  return avx512;
}
bool backward_by_reference(const ConvShape& s) { return s.in_channels < 16 && blas_runs_avx512(); }

Plan* plan_for(const ConvShape& s) {
  Context& c = context();
  const Key key{s.n, s.in_channels, s.height, s.width, s.out_channels, s.kernel, s.stride, s.pad};
  auto it = c.plans.find(key);
  if (it == c.plans.end()) {
    if (c.plans.size() >= 64) c.plans.clear();  // batch sizes that keep changing: start over
    it = c.plans.emplace(key, build_plan(c.engine, s)).first;
  }
  return it->second ? &*it->second : nullptr;
}

}  // namespace

void conv2d_forward(const ConvShape& s, const float* x, const float* w, const float* b, float* y,
                    float* workspace) {
  if (s.n == 0) return;
  Plan* p = plan_for(s);
  if (!p) return conv2d_forward_gemm(s, x, w, b, y, workspace);
  dnnl::stream& st = context().stream;
  const memory dst = p->fwd_y.out(y);
  p->forward.execute(st, {{DNNL_ARG_SRC, p->fwd_x.in(st, x)},
                          {DNNL_ARG_WEIGHTS, p->fwd_w.in(st, w)},
                          {DNNL_ARG_BIAS, memory({{s.out_channels}, f32, Tag::x}, context().engine, const_cast<float*>(b))},
                          {DNNL_ARG_DST, dst},
                          {DNNL_ARG_SCRATCHPAD, p->fwd_scratch}});
  p->fwd_y.finish(st, y);
  st.wait();
}

void conv2d_backward(const ConvShape& s, const float* x, const float* w, const float* dy, float* dx,
                     float* dw, float* db, float* workspace, bool accumulate) {
  const int64_t w_count = s.out_channels * s.in_channels * s.kernel * s.kernel;
  if (s.n == 0) {
    if (!accumulate) {
      std::fill(dw, dw + w_count, 0.0f);
      std::fill(db, db + s.out_channels, 0.0f);
    }
    return;
  }
  Plan* p = backward_by_reference(s) ? nullptr : plan_for(s);
  if (!p) return conv2d_backward_gemm(s, x, w, dy, dx, dw, db, workspace, accumulate);
  Context& c = context();
  dnnl::stream& st = c.stream;
  if (dx) {
    const memory diff_src = p->bd_dx.out(dx);
    p->backward_data.execute(st, {{DNNL_ARG_DIFF_DST, p->bd_dy.in(st, dy)},
                                  {DNNL_ARG_WEIGHTS, p->bd_w.in(st, w)},
                                  {DNNL_ARG_DIFF_SRC, diff_src},
                                  {DNNL_ARG_SCRATCHPAD, p->bd_scratch}});
    p->bd_dx.finish(st, dx);
  }
  float* dw_out = dw;
  float* db_out = db;
  if (accumulate) {
    p->dw_sum.resize(size_t(w_count));
    p->db_sum.resize(size_t(s.out_channels));
    dw_out = p->dw_sum.data();
    db_out = p->db_sum.data();
  }
  const memory diff_weights = p->bw_dw.out(dw_out);
  p->backward_weights.execute(st, {{DNNL_ARG_SRC, p->bw_x.in(st, x)},
                                   {DNNL_ARG_DIFF_DST, p->bw_dy.in(st, dy)},
                                   {DNNL_ARG_DIFF_WEIGHTS, diff_weights},
                                   {DNNL_ARG_DIFF_BIAS, memory({{s.out_channels}, f32, Tag::x}, c.engine, db_out)},
                                   {DNNL_ARG_SCRATCHPAD, p->bw_scratch}});
  p->bw_dw.finish(st, dw_out);
  st.wait();
  if (accumulate) {
    for (int64_t i = 0; i < w_count; ++i) dw[i] += dw_out[i];
    for (int64_t i = 0; i < s.out_channels; ++i) db[i] += db_out[i];
  }
}

std::string conv2d_implementation() {
  const dnnl_version_t* v = dnnl::version();
  const Plan* p = plan_for(ConvShape{1, 16, 28, 28, 16, 3, 1, 1});
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) +
         " (" + (p ? p->impl : std::string("declined: sgemm per kernel tap")) + "; sgemm below 3 input channels" +
         (blas_runs_avx512() ? std::string(", and backward below 16") : std::string()) + ")";
}

void set_conv_threads(int threads) { omp_set_num_threads(std::max(1, threads)); }

#else  // without oneDNN: the reference is the production path

void conv2d_forward(const ConvShape& s, const float* x, const float* w, const float* b, float* y,
                    float* workspace) {
  conv2d_forward_gemm(s, x, w, b, y, workspace);
}
void conv2d_backward(const ConvShape& s, const float* x, const float* w, const float* dy, float* dx,
                     float* dw, float* db, float* workspace, bool accumulate) {
  conv2d_backward_gemm(s, x, w, dy, dx, dw, db, workspace, accumulate);
}
std::string conv2d_implementation() { return "sgemm per kernel tap (reference; built without oneDNN)"; }
void set_conv_threads(int) {}

#endif

// The reference's workspace either way: it is the fallback for shapes oneDNN declines.
int64_t conv2d_workspace(const ConvShape& s) { return conv2d_gemm_workspace(s); }

}  // namespace dp::cpu
