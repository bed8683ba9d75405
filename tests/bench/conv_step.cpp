// Times the CPU convolutions alone on the example CNN's layers (configs/cnn.toml: stages 8, 16, 32 at
// 28, 14, 7 pixels; one rank's batch of 64): forward, and backward with the input gradient, of the
// production path (oneDNN where built) and of the sgemm reference, interleaved call by call, for
// comparison with PyTorch's (tests/bench/torch_conv.py, same shapes).
// Usage: bench_conv_step [--batch B] [--reps N] [--threads T]
// Prints one JSON line per layer shape and implementation: ms min/median of forward and of backward.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/cpu/conv.h"
#include "kernels/cpu/ops.h"
#include "lib/core/rng.h"
#include "lib/machine/machine.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Timings {
  std::vector<double> forward, backward;
};

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  dp::machine::settle_blas_kernels(argv);
  int64_t batch = 64, reps = 30, threads = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int64_t value = std::atoll(argv[i + 1]);
    if (flag == "--batch") batch = value;
    else if (flag == "--reps") reps = value;
    else if (flag == "--threads") threads = value;
    else return std::fprintf(stderr, "bench_conv_step: unknown option %s\n", flag.c_str()), 2;
  }
  dp::cpu::set_compute_threads(int(threads));
  // name, C, H (= W), O, stride: every distinct convolution of configs/cnn.toml
  struct Layer {
    const char* name;
    int64_t c, h, o, stride;
  };
  const Layer layers[] = {{"stem", 1, 28, 8, 1},       {"res8", 8, 28, 8, 1},   {"down16", 8, 28, 16, 2},
                          {"res16", 16, 14, 16, 1},    {"down32", 16, 14, 32, 2}, {"res32", 32, 7, 32, 1}};
  struct Impl {
    const char* name;
    decltype(&dp::cpu::conv2d_forward) forward;
    decltype(&dp::cpu::conv2d_backward) backward;
    decltype(&dp::cpu::conv2d_workspace) workspace;
  };
  const Impl impls[] = {{"production", dp::cpu::conv2d_forward, dp::cpu::conv2d_backward, dp::cpu::conv2d_workspace},
                        {"sgemm-reference", dp::cpu::conv2d_forward_gemm, dp::cpu::conv2d_backward_gemm,
                         dp::cpu::conv2d_gemm_workspace}};
  dp::Rng rng(7);
  for (const Layer& l : layers) {
    const dp::cpu::ConvShape s{batch, l.c, l.h, l.h, l.o, 3, l.stride, 1};
    const int64_t x_n = batch * l.c * l.h * l.h, y_n = batch * l.o * s.out_height() * s.out_width(),
                  w_n = l.o * l.c * 9;
    std::vector<float> x(static_cast<size_t>(x_n)), w(static_cast<size_t>(w_n)), b(static_cast<size_t>(l.o)),
        y(static_cast<size_t>(y_n)), dy(static_cast<size_t>(y_n)), dx(static_cast<size_t>(x_n)),
        dw(static_cast<size_t>(w_n)), db(static_cast<size_t>(l.o));
    for (auto* v : {&x, &w, &b, &dy})
      for (float& f : *v) f = float(rng.uniform()) - 0.5f;
    std::vector<Timings> t(std::size(impls));
    std::vector<std::vector<float>> ws;
    for (const Impl& im : impls) ws.emplace_back(size_t(std::max<int64_t>(1, im.workspace(s))));
    for (int64_t r = 0; r < reps + 3; ++r)
      for (size_t i = 0; i < std::size(impls); ++i) {  // interleaved; the first 3 rounds warm up
        auto t0 = Clock::now();
        impls[i].forward(s, x.data(), w.data(), b.data(), y.data(), ws[i].data());
        const double f = ms_since(t0);
        t0 = Clock::now();
        impls[i].backward(s, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(), ws[i].data(), false);
        const double bw = ms_since(t0);
        if (r >= 3) {
          t[i].forward.push_back(f);
          t[i].backward.push_back(bw);
        }
      }
    for (size_t i = 0; i < std::size(impls); ++i)
      fmt::print("{{\"runner\":\"dptrain {}\",\"layer\":\"{}\",\"shape\":\"{}x{}x{}x{} -> {} s{}\",\"fwd_min\":{:.4f},"
                 "\"fwd_median\":{:.4f},\"bwd_min\":{:.4f},\"bwd_median\":{:.4f}}}\n",
                 impls[i].name, l.name, batch, l.c, l.h, l.h, l.o, l.stride,
                 *std::min_element(t[i].forward.begin(), t[i].forward.end()), median(t[i].forward),
                 *std::min_element(t[i].backward.begin(), t[i].backward.end()), median(t[i].backward));
  }
  fmt::print("{{\"machine\":\"{} (production convolutions: {})\"}}\n", dp::machine::report_machine().line(),
             dp::cpu::conv2d_implementation());
  return 0;
}
