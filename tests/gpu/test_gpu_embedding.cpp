// kernels/cuda/embedding.cu against kernels/cpu/embedding.cpp: the forward is one float add per element
// (exact); the backward accumulates into non-zero tables (relative 1e-6; repeated tokens are summed in
// another order on the GPU).
#define BOOST_TEST_MODULE gpu_embedding
#include "tests/gpu/gpu_testing.h"

#include "kernels/cpu/embedding.h"
#include "kernels/cuda/embedding.h"

using namespace dp;
using namespace dp::gpu_test;

BOOST_AUTO_TEST_CASE(forward_and_backward_match_cpu) {
  struct Shape {
    int64_t b, t, c, vocab, context;
  };
  for (const Shape s : {Shape{1, 1, 1, 1, 1}, Shape{3, 17, 24, 11, 20}, Shape{8, 128, 128, 96, 128}}) {
    BOOST_TEST_CONTEXT("B=" << s.b << " T=" << s.t << " C=" << s.c << " V=" << s.vocab) {
      auto g = rng(uint64_t(s.b * 7 + s.t * 131 + s.c * 1009 + s.vocab));
      const auto tokens = integers(g, size_t(s.b * s.t), int32_t(s.vocab));
      const auto wte = uniform(g, size_t(s.vocab * s.c)), wpe = uniform(g, size_t(s.context * s.c));
      const auto dout = uniform(g, size_t(s.b * s.t * s.c));
      auto dwte = uniform(g, wte.size()), dwpe = uniform(g, wpe.size());  // accumulated into
      DeviceBuffer<int32_t> gtok(tokens);
      DeviceBuffer<float> gwte(wte), gwpe(wpe), gdout(dout), gdwte(dwte), gdwpe(dwpe);

      std::vector<float> out(dout.size());
      cpu::embedding_forward(tokens.data(), wte.data(), wpe.data(), out.data(), s.b, s.t, s.c);
      cpu::embedding_backward(tokens.data(), dout.data(), dwte.data(), dwpe.data(), s.b, s.t, s.c);
      auto gout = poisoned(out.size());
      cuda::embedding_forward(gtok.data(), gwte.data(), gwpe.data(), gout.data(), s.b, s.t, s.c);
      cuda::embedding_backward(gtok.data(), gdout.data(), gdwte.data(), gdwpe.data(), s.b, s.t, s.c);
      expect_close("out", gout.download(), out, 0.0);
      expect_close("dwte", gdwte.download(), dwte, 1e-6);
      expect_close("dwpe", gdwpe.download(), dwpe, 1e-6);
    }
  }
}
