// Convolution through cuDNN's convolution API: one plan per shape (descriptors + algorithms chosen by
// cuDNN's heuristics, restricted to fp32 FMA kernels, deterministic ones preferred), cached for the
// process. Bias forward and backward are cudnnAddTensor and cudnnConvolutionBackwardBias.
#include <map>
#include <string>
#include <mutex>
#include <tuple>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/conv.h"
#include "lib/core/error.h"

namespace dp::cuda {
namespace detail {

void check(cudnnStatus_t status, const char* call, const char* file, int line) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  char last[512] = {};
  cudnnGetLastErrorString(last, sizeof last);
  std::string detail = cudnnGetErrorString(status);
  if (last[0] != '\0') detail += std::string(" (") + last + ")";
  throw RuntimeFailure(source_location(file, line), std::string(call) + " failed: " + detail,
                       "check that the GPU is usable (nvidia-smi) and has enough free memory");
}

cudnnHandle_t cudnn() {
  static std::mutex mutex;
  static cudnnHandle_t handle = nullptr;  // never destroyed: must not be torn down after the driver
  std::lock_guard lock(mutex);
  if (!handle) {
    const size_t loaded = cudnnGetVersion();
    if (loaded / 10000 != CUDNN_MAJOR)
      throw RuntimeFailure("cuDNN", "loaded cuDNN " + std::to_string(loaded) + " but built against " +
                                        std::to_string(CUDNN_VERSION),
                           "put cuDNN " + std::to_string(CUDNN_MAJOR) + ".x first on LD_LIBRARY_PATH");
    DP_CUDA_CHECK(cudnnCreate(&handle));
  }
  return handle;
}

}  // namespace detail

std::string cudnn_version() {
  return "cuDNN " + std::to_string(cudnnGetVersion()) + " (built with " + std::to_string(CUDNN_VERSION) + ")";
}

namespace {

using detail::cudnn;

constexpr size_t kMaxWorkspace = size_t(1) << 30;  // skip algorithms that want more than 1 GiB

struct Plan {
  cudnnTensorDescriptor_t x, y, bias;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
  cudnnConvolutionFwdAlgo_t fwd;
  cudnnConvolutionBwdDataAlgo_t bwd_data;
  cudnnConvolutionBwdFilterAlgo_t bwd_filter;
  size_t fwd_bytes, bwd_data_bytes, bwd_filter_bytes;
};

// The first algorithm (cuDNN ranks them fastest first) whose heuristic succeeded and that fits
// kMaxWorkspace: deterministic FMA (fp32, no TF32) ones first, then any FMA one, then one reported with
// the default math type (the descriptor keeps CUDNN_FMA_MATH, which forbids TF32 either way).
template <class Perf>
const Perf& pick(const Perf* perf, int count, const char* what) {
  for (int pass = 0; pass < 3; ++pass)
    for (int i = 0; i < count; ++i) {
      const Perf& q = perf[i];
      if (q.status != CUDNN_STATUS_SUCCESS || q.memory > kMaxWorkspace) continue;
      const bool fma = q.mathType == CUDNN_FMA_MATH;
      if ((pass == 0 && fma && q.determinism == CUDNN_DETERMINISTIC) || (pass == 1 && fma) ||
          (pass == 2 && q.mathType == CUDNN_DEFAULT_MATH))
        return q;
    }
  throw RuntimeFailure("cuDNN", std::string("no fp32 (FMA) algorithm for the convolution's ") + what);
}

Plan make_plan(const ConvShape& s) {
  const int n = DP_CUDA_INT(s.n), c = DP_CUDA_INT(s.in_channels), h = DP_CUDA_INT(s.height),
            wd = DP_CUDA_INT(s.width), o = DP_CUDA_INT(s.out_channels), k = DP_CUDA_INT(s.kernel);
  Plan p{};
  DP_CUDA_CHECK(cudnnCreateTensorDescriptor(&p.x));
  DP_CUDA_CHECK(cudnnCreateTensorDescriptor(&p.y));
  DP_CUDA_CHECK(cudnnCreateTensorDescriptor(&p.bias));
  DP_CUDA_CHECK(cudnnCreateFilterDescriptor(&p.w));
  DP_CUDA_CHECK(cudnnCreateConvolutionDescriptor(&p.conv));
  DP_CUDA_CHECK(cudnnSetTensor4dDescriptor(p.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, wd));
  DP_CUDA_CHECK(cudnnSetFilter4dDescriptor(p.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, o, c, k, k));
  DP_CUDA_CHECK(cudnnSetConvolution2dDescriptor(p.conv, DP_CUDA_INT(s.pad), DP_CUDA_INT(s.pad),
                                                DP_CUDA_INT(s.stride), DP_CUDA_INT(s.stride), 1, 1,
                                                CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  DP_CUDA_CHECK(cudnnSetConvolutionMathType(p.conv, CUDNN_FMA_MATH));  // fp32: no TF32 tensor cores
  int on = 0, oc = 0, op = 0, oq = 0;
  DP_CUDA_CHECK(cudnnGetConvolution2dForwardOutputDim(p.conv, p.x, p.w, &on, &oc, &op, &oq));
  DP_CHECK(on == n && oc == o && op == s.out_height() && oq == s.out_width(),
           "cuDNN's output shape differs from ConvShape's");
  DP_CUDA_CHECK(cudnnSetTensor4dDescriptor(p.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, o, op, oq));
  DP_CUDA_CHECK(cudnnSetTensor4dDescriptor(p.bias, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, o, 1, 1));

  cudnnHandle_t handle = cudnn();
  int count = 0;
  cudnnConvolutionFwdAlgoPerf_t fwd[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  DP_CUDA_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(handle, p.x, p.w, p.conv, p.y,
                                                       CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, fwd));
  p.fwd = pick(fwd, count, "forward").algo;
  cudnnConvolutionBwdDataAlgoPerf_t bd[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  DP_CUDA_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, p.w, p.y, p.conv, p.x,
                                                            CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, bd));
  p.bwd_data = pick(bd, count, "backward data").algo;
  cudnnConvolutionBwdFilterAlgoPerf_t bf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  DP_CUDA_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
      handle, p.x, p.y, p.conv, p.w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count, bf));
  p.bwd_filter = pick(bf, count, "backward filter").algo;
  // Exact workspace sizes for the chosen algorithms (the heuristics' figures are estimates).
  DP_CUDA_CHECK(cudnnGetConvolutionForwardWorkspaceSize(handle, p.x, p.w, p.conv, p.y, p.fwd, &p.fwd_bytes));
  DP_CUDA_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(handle, p.w, p.y, p.conv, p.x, p.bwd_data,
                                                             &p.bwd_data_bytes));
  DP_CUDA_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(handle, p.x, p.y, p.conv, p.w, p.bwd_filter,
                                                               &p.bwd_filter_bytes));
  return p;
}

// Plans live for the process (a model has a handful of shapes; descriptors are a few hundred bytes).
const Plan& plan_for(const ConvShape& s) {
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>;
  static std::mutex mutex;
  static auto* plans = new std::map<Key, Plan>;
  const Key key{s.n, s.in_channels, s.height, s.width, s.out_channels, s.kernel, s.stride, s.pad};
  std::lock_guard lock(mutex);
  auto it = plans->find(key);
  if (it == plans->end()) it = plans->emplace(key, make_plan(s)).first;
  return it->second;
}

void* workspace_for(size_t bytes) {
  return bytes ? detail::scratch(detail::Slot::kCudnn, bytes) : nullptr;
}

}  // namespace

void conv2d_forward(const ConvShape& s, const float* x, const float* w, const float* b, float* y,
                    float*) {
  if (s.n == 0) return;
  const Plan& p = plan_for(s);
  const float one = 1.0f, zero = 0.0f;
  DP_CUDA_CHECK(cudnnConvolutionForward(cudnn(), &one, p.x, x, p.w, w, p.conv, p.fwd,
                                        workspace_for(p.fwd_bytes), p.fwd_bytes, &zero, p.y, y));
  DP_CUDA_CHECK(cudnnAddTensor(cudnn(), &one, p.bias, b, &one, p.y, y));
}

void conv2d_backward(const ConvShape& s, const float* x, const float* w, const float* dy, float* dx,
                     float* dw, float* db, float*, bool accumulate) {
  const int64_t ckk = s.in_channels * s.kernel * s.kernel;
  if (s.n == 0) {
    if (accumulate) return;
    DP_CUDA_CHECK(cudaMemset(dw, 0, size_t(s.out_channels * ckk) * sizeof(float)));
    DP_CUDA_CHECK(cudaMemset(db, 0, size_t(s.out_channels) * sizeof(float)));
    return;
  }
  const Plan& p = plan_for(s);
  const float one = 1.0f, zero = 0.0f, param_beta = accumulate ? 1.0f : 0.0f;
  DP_CUDA_CHECK(cudnnConvolutionBackwardBias(cudnn(), &one, p.y, dy, &param_beta, p.bias, db));
  DP_CUDA_CHECK(cudnnConvolutionBackwardFilter(cudnn(), &one, p.x, x, p.y, dy, p.conv, p.bwd_filter,
                                               workspace_for(p.bwd_filter_bytes), p.bwd_filter_bytes,
                                               &param_beta, p.w, dw));
  if (dx)
    DP_CUDA_CHECK(cudnnConvolutionBackwardData(cudnn(), &one, p.w, w, p.y, dy, p.conv, p.bwd_data,
                                               workspace_for(p.bwd_data_bytes), p.bwd_data_bytes, &zero,
                                               p.x, dx));
}

}  // namespace dp::cuda
