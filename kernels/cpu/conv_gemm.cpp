// The reference 2-D convolution: OpenBLAS sgemm, one sample at a time so that everything a sample touches
// stays in cache. conv.cpp's oneDNN path is tested against it, and it runs where oneDNN is not built.
//
// Layout. The sample is copied, zero-padded, into a polyphase buffer: for stride S, S*S components
// (r, t) each holding the padded input's rows r, r+S, ... and columns t, t+S, ... as a (C, Hq, Wq) block.
// Tap (ki, kj) of output (p, q) reads padded (S*p + ki, S*q + kj), which is component (ki % S, kj % S) at
// (p + ki/S, q + kj/S). Outputs are computed on the component width: "wide" column i = p*Wq + q,
// 0 <= i < L = (P-1)*Wq + Q, so for every tap the inputs of all outputs form ONE (C, L) matrix with leading
// dimension Hq*Wq at a fixed offset into the buffer: no im2col. Columns with q >= Q are computed and dropped
// in the forward, and given a zero output gradient in the backward.
//
// With C >= kTapGemmChannels the convolution is K*K GEMMs, one per tap, with K = C (forward, and the input
// gradient accumulated straight into a padded gradient buffer) or a GEMM with K = L per tap (weight
// gradient); measured faster than one big im2col GEMM, whose column matrix costs a copy and a second
// packing. With fewer channels those GEMMs would be too thin, so a column matrix (C*K*K, L) is built from
// contiguous copies of the same buffer and used in one GEMM.
#include "kernels/cpu/conv.h"

#include <cblas.h>

#include <algorithm>

namespace dp::cpu {

namespace {

constexpr int64_t kTapGemmChannels = 4;  // measured: per-tap GEMMs win from 4 channels up

struct Geometry {
  int64_t c, h, w, o, k, s, pad, p, q;  // channels, input size, outputs, kernel, stride, padding, output size
  int64_t hq, wq, plane, len;           // component size, its area, wide columns L
  bool per_tap;
  explicit Geometry(const ConvShape& sh)
      : c(sh.in_channels), h(sh.height), w(sh.width), o(sh.out_channels), k(sh.kernel), s(sh.stride),
        pad(sh.pad), p(sh.out_height()), q(sh.out_width()), hq((sh.height + 2 * sh.pad + sh.stride - 1) / sh.stride),
        wq((sh.width + 2 * sh.pad + sh.stride - 1) / sh.stride), plane(hq * wq), len((p - 1) * wq + q),
        per_tap(sh.in_channels >= kTapGemmChannels) {}
  int64_t taps() const { return k * k; }
  int64_t poly_size() const { return s * s * c * plane; }
  // Where tap (ki, kj) reads input channel 0 in the polyphase buffer (channel c is plane floats further).
  int64_t tap_offset(int64_t ki, int64_t kj) const {
    return ((ki % s) * s + kj % s) * c * plane + (ki / s) * wq + kj / s;
  }
};

// Workspace layout: [per tap: weights by tap (K*K, O, C), weight gradient by tap (K*K, O, C)]
// [polyphase buffer] [wide outputs (O, L)] [without per-tap GEMMs: column matrix (C*K*K, L)].
struct Workspace {
  float *w_taps, *dw_taps, *poly, *wide, *cols;
  Workspace(const Geometry& g, float* base) {
    const int64_t tap_weights = g.per_tap ? g.taps() * g.o * g.c : 0;
    w_taps = base;
    dw_taps = w_taps + tap_weights;
    poly = dw_taps + tap_weights;
    wide = poly + g.poly_size();
    cols = wide + g.o * g.len;
  }
  static int64_t size(const Geometry& g) {
    return (g.per_tap ? 2 * g.taps() * g.o * g.c : g.c * g.taps() * g.len) + g.poly_size() + g.o * g.len;
  }
};

// Walks the input positions component by component: f(row of x, row of the component, column step, first
// component column b, end column, first x column) for every (component, channel, row) holding input.
template <class F>
void for_each_poly_row(const Geometry& g, F&& f) {
  for (int64_t r = 0; r < g.s; ++r)
    for (int64_t t = 0; t < g.s; ++t) {
      // component columns b with input column b*s + t - pad inside [0, W)
      const int64_t first = g.pad - t, last = g.w - 1 + g.pad - t;
      const int64_t b_lo = first <= 0 ? 0 : (first + g.s - 1) / g.s;
      const int64_t b_hi = last < 0 ? 0 : std::min(g.wq, last / g.s + 1);
      if (b_hi <= b_lo) continue;
      const int64_t comp = (r * g.s + t) * g.c * g.plane;
      for (int64_t c = 0; c < g.c; ++c)
        for (int64_t a = 0; a < g.hq; ++a) {
          const int64_t y = a * g.s + r - g.pad;
          if (y < 0 || y >= g.h) continue;
          f((c * g.h + y) * g.w, comp + c * g.plane + a * g.wq, b_lo, b_hi, b_lo * g.s + t - g.pad);
        }
    }
}

// poly = x (C, H, W), zero-padded, split into the stride's components.
void to_poly(const Geometry& g, const float* x, float* poly) {
  std::fill(poly, poly + g.poly_size(), 0.0f);
  const int64_t st = g.s;
  for_each_poly_row(g, [&](int64_t x_row, int64_t p_row, int64_t b_lo, int64_t b_hi, int64_t x0) {
    const float* src = x + x_row + x0;
    float* dst = poly + p_row;
    if (st == 1)
      std::copy(src, src + (b_hi - b_lo), dst + b_lo);
    else
      for (int64_t b = b_lo; b < b_hi; ++b) dst[b] = src[(b - b_lo) * st];
  });
}

// dx (C, H, W) = the unpadded part of the polyphase gradient buffer.
void from_poly(const Geometry& g, const float* poly, float* dx) {
  const int64_t st = g.s;
  for_each_poly_row(g, [&](int64_t x_row, int64_t p_row, int64_t b_lo, int64_t b_hi, int64_t x0) {
    float* dst = dx + x_row + x0;
    const float* src = poly + p_row;
    if (st == 1)
      std::copy(src + b_lo, src + b_hi, dst);
    else
      for (int64_t b = b_lo; b < b_hi; ++b) dst[(b - b_lo) * st] = src[b];
  });
}

// y (O, P, Q) = wide (O, L) without the extra columns, + b[o].
void from_wide(const Geometry& g, const float* wide, const float* b, float* y) {
  for (int64_t o = 0; o < g.o; ++o) {
    const float bias = b[o];
    for (int64_t p = 0; p < g.p; ++p) {
      const float* src = wide + o * g.len + p * g.wq;
      float* dst = y + (o * g.p + p) * g.q;
      for (int64_t q = 0; q < g.q; ++q) dst[q] = src[q] + bias;
    }
  }
}

// wide (O, L) = dy (O, P, Q) with zeros in the extra columns.
void to_wide(const Geometry& g, const float* dy, float* wide) {
  for (int64_t o = 0; o < g.o; ++o)
    for (int64_t p = 0; p < g.p; ++p) {
      const float* src = dy + (o * g.p + p) * g.q;
      float* dst = wide + o * g.len + p * g.wq;
      for (int64_t q = 0; q < g.q; ++q) dst[q] = src[q];
      if (p + 1 < g.p)
        for (int64_t q = g.q; q < g.wq; ++q) dst[q] = 0.0f;
    }
}

// cols (C*K*K, L): row (c, ki, kj) is the contiguous run tap (ki, kj) reads of channel c.
void im2col(const Geometry& g, const float* poly, float* cols) {
  for (int64_t c = 0; c < g.c; ++c)
    for (int64_t ki = 0; ki < g.k; ++ki)
      for (int64_t kj = 0; kj < g.k; ++kj, cols += g.len) {
        const float* src = poly + g.tap_offset(ki, kj) + c * g.plane;
        std::copy(src, src + g.len, cols);
      }
}

// poly += the rows of dcols (C*K*K, L) added back where im2col read them.
void col2im(const Geometry& g, const float* dcols, float* poly) {
  for (int64_t c = 0; c < g.c; ++c)
    for (int64_t ki = 0; ki < g.k; ++ki)
      for (int64_t kj = 0; kj < g.k; ++kj, dcols += g.len) {
        float* dst = poly + g.tap_offset(ki, kj) + c * g.plane;
        for (int64_t i = 0; i < g.len; ++i) dst[i] += dcols[i];
      }
}

// db (O) += row sums of dy (O, PQ); several partial sums per row so the loop vectorises.
void add_row_sums(const float* dy, float* db, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = dy + r * cols;
    float acc[8] = {};
    int64_t j = 0;
    for (; j + 8 <= cols; j += 8)
      for (int u = 0; u < 8; ++u) acc[u] += row[j + u];
    float sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; j < cols; ++j) sum += row[j];
    db[r] += sum;
  }
}

// w_taps[tap][o][c] = w[o][c][tap]
void weights_by_tap(const Geometry& g, const float* w, float* w_taps) {
  for (int64_t o = 0; o < g.o; ++o)
    for (int64_t c = 0; c < g.c; ++c)
      for (int64_t t = 0; t < g.taps(); ++t) w_taps[(t * g.o + o) * g.c + c] = w[(o * g.c + c) * g.taps() + t];
}

}  // namespace

int64_t conv2d_gemm_workspace(const ConvShape& s) { return Workspace::size(Geometry(s)); }

void conv2d_forward_gemm(const ConvShape& s, const float* x, const float* w, const float* b, float* y,
                    float* workspace) {
  const Geometry g(s);
  const Workspace ws(g, workspace);
  const int64_t in_size = g.c * g.h * g.w, out_size = g.o * g.p * g.q, ckk = g.c * g.taps();
  if (g.per_tap && s.n > 0) weights_by_tap(g, w, ws.w_taps);
  for (int64_t i = 0; i < s.n; ++i) {
    to_poly(g, x + i * in_size, ws.poly);
    if (g.per_tap) {
      // wide (O, L) = sum over taps of w_tap (O, C) * inputs_tap (C, L)
      for (int64_t ki = 0; ki < g.k; ++ki)
        for (int64_t kj = 0; kj < g.k; ++kj) {
          const int64_t t = ki * g.k + kj;
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(g.o), int(g.len), int(g.c), 1.0f,
                      ws.w_taps + t * g.o * g.c, int(g.c), ws.poly + g.tap_offset(ki, kj), int(g.plane),
                      t == 0 ? 0.0f : 1.0f, ws.wide, int(g.len));
        }
    } else {
      // wide (O, L) = w (O, CKK) * cols (CKK, L)
      im2col(g, ws.poly, ws.cols);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(g.o), int(g.len), int(ckk), 1.0f, w, int(ckk),
                  ws.cols, int(g.len), 0.0f, ws.wide, int(g.len));
    }
    from_wide(g, ws.wide, b, y + i * out_size);
  }
}

void conv2d_backward_gemm(const ConvShape& s, const float* x, const float* w, const float* dy, float* dx,
                     float* dw, float* db, float* workspace, bool accumulate) {
  const Geometry g(s);
  const Workspace ws(g, workspace);
  const int64_t in_size = g.c * g.h * g.w, out_size = g.o * g.p * g.q, ckk = g.c * g.taps();
  if (!accumulate) {
    std::fill(dw, dw + g.o * ckk, 0.0f);
    std::fill(db, db + g.o, 0.0f);
  }
  if (s.n == 0) return;
  if (g.per_tap && dx) weights_by_tap(g, w, ws.w_taps);
  for (int64_t i = 0; i < s.n; ++i) {
    const float* dyi = dy + i * out_size;
    add_row_sums(dyi, db, g.o, g.p * g.q);
    to_wide(g, dyi, ws.wide);
    to_poly(g, x + i * in_size, ws.poly);
    if (g.per_tap) {
      // dw_tap (O, C) (+)= wide (O, L) * inputs_tap^T (L, C)
      for (int64_t ki = 0; ki < g.k; ++ki)
        for (int64_t kj = 0; kj < g.k; ++kj) {
          const int64_t t = ki * g.k + kj;
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(g.o), int(g.c), int(g.len), 1.0f, ws.wide,
                      int(g.len), ws.poly + g.tap_offset(ki, kj), int(g.plane), i == 0 ? 0.0f : 1.0f,
                      ws.dw_taps + t * g.o * g.c, int(g.c));
        }
      if (!dx) continue;
      // inputs_tap gradient (C, L) += w_tap^T (C, O) * wide (O, L), straight into the zeroed buffer
      std::fill(ws.poly, ws.poly + g.poly_size(), 0.0f);
      for (int64_t ki = 0; ki < g.k; ++ki)
        for (int64_t kj = 0; kj < g.k; ++kj) {
          const int64_t t = ki * g.k + kj;
          cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(g.c), int(g.len), int(g.o), 1.0f,
                      ws.w_taps + t * g.o * g.c, int(g.c), ws.wide, int(g.len), 1.0f,
                      ws.poly + g.tap_offset(ki, kj), int(g.plane));
        }
    } else {
      // dw (O, CKK) += wide (O, L) * cols^T (L, CKK)
      im2col(g, ws.poly, ws.cols);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(g.o), int(ckk), int(g.len), 1.0f, ws.wide,
                  int(g.len), ws.cols, int(g.len), 1.0f, dw, int(ckk));
      if (!dx) continue;
      // dcols (CKK, L) = w^T (CKK, O) * wide (O, L), added back into the zeroed buffer
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(ckk), int(g.len), int(g.o), 1.0f, w, int(ckk),
                  ws.wide, int(g.len), 0.0f, ws.cols, int(g.len));
      std::fill(ws.poly, ws.poly + g.poly_size(), 0.0f);
      col2im(g, ws.cols, ws.poly);
    }
    from_poly(g, ws.poly, dx + i * in_size);
  }
  if (g.per_tap)
    for (int64_t o = 0; o < g.o; ++o)
      for (int64_t c = 0; c < g.c; ++c)
        for (int64_t t = 0; t < g.taps(); ++t) dw[(o * g.c + c) * g.taps() + t] += ws.dw_taps[(t * g.o + o) * g.c + c];
}

}  // namespace dp::cpu
