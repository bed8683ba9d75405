// kernels/cuda/attention.cu against kernels/cpu/attention.cpp: att (exact zeros above the diagonal),
// out (relative 1e-5) and dqkv (1e-4: the softmax backward subtracts nearly equal terms).
#define BOOST_TEST_MODULE gpu_attention
#include "tests/gpu/gpu_testing.h"

#include "kernels/cpu/attention.h"
#include "kernels/cuda/attention.h"

using namespace dp;
using namespace dp::gpu_test;

BOOST_AUTO_TEST_CASE(forward_and_backward_match_cpu) {
  struct Shape {
    int64_t b, t, c, nh;
  };
  for (const Shape s : {Shape{1, 1, 8, 2}, Shape{2, 37, 24, 3}, Shape{1, 70, 32, 2}, Shape{2, 128, 128, 4}}) {
    BOOST_TEST_CONTEXT("B=" << s.b << " T=" << s.t << " C=" << s.c << " NH=" << s.nh) {
      auto g = rng(uint64_t(s.b * 7 + s.t * 131 + s.c * 1009 + s.nh));
      const size_t qkv_size = size_t(s.b * s.t * 3 * s.c), att_size = size_t(s.b * s.nh * s.t * s.t),
                   out_size = size_t(s.b * s.t * s.c);
      const auto qkv = uniform(g, qkv_size, -2.0f, 2.0f), dout = uniform(g, out_size);
      std::vector<float> att(att_size), out(out_size), dqkv(qkv_size), scratch(size_t(s.t * s.t));
      cpu::attention_forward(qkv.data(), att.data(), out.data(), s.b, s.t, s.c, s.nh);
      cpu::attention_backward(qkv.data(), att.data(), dout.data(), dqkv.data(), scratch.data(), s.b, s.t, s.c, s.nh);

      DeviceBuffer<float> gqkv(qkv), gdout(dout);
      auto gatt = poisoned(att_size), gout = poisoned(out_size), gdqkv = poisoned(qkv_size),
           gscratch = poisoned(size_t(cuda::attention_scratch_floats(s.t, s.nh)));
      cuda::attention_forward(gqkv.data(), gatt.data(), gout.data(), s.b, s.t, s.c, s.nh);
      const auto att_got = gatt.download();
      expect_close("att", att_got, att, 1e-5);
      bool zeros = true;
      for (size_t r = 0; r < att_size / size_t(s.t); ++r)
        for (size_t j = r % size_t(s.t) + 1; j < size_t(s.t); ++j) zeros = zeros && att_got[r * size_t(s.t) + j] == 0.0f;
      BOOST_TEST(zeros, "att is exactly zero above the diagonal");
      expect_close("out", gout.download(), out, 1e-5);
      // Backward from the CPU's att, so that only the backward is compared.
      gatt.upload(att);
      cuda::attention_backward(gqkv.data(), gatt.data(), gdout.data(), gdqkv.data(), gscratch.data(), s.b, s.t, s.c,
                               s.nh);
      expect_close("dqkv", gdqkv.download(), dqkv, 1e-4);
    }
  }
}
