// Device build only (cmake/Device.cmake): a plain C++ cblas_sgemm, and OpenBLAS's thread-count calls, so
// that the CPU kernels (the GPU tests' oracle) link without libopenblas, which the GPU machine lacks.
// Accumulates in double: slow (tests use small shapes) but a more accurate reference than any fp32 GEMM.
#include <cblas.h>

#include <algorithm>
#include <vector>

namespace {

// C (m x n, row-major, ldc) = alpha op(A) op(B) + beta C; C is not read when beta == 0 (BLAS semantics).
void sgemm_row_major(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
                     int ldb, float beta, float* c, int ldc) {
  std::vector<double> acc(static_cast<size_t>(n > 0 ? n : 0));
  for (int i = 0; i < m; ++i) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int p = 0; p < k; ++p) {
      const double av = ta ? a[static_cast<long>(p) * lda + i] : a[static_cast<long>(i) * lda + p];
      if (tb) {
        for (int j = 0; j < n; ++j) acc[j] += av * b[static_cast<long>(j) * ldb + p];
      } else {
        const float* brow = b + static_cast<long>(p) * ldb;
        for (int j = 0; j < n; ++j) acc[j] += av * brow[j];
      }
    }
    float* crow = c + static_cast<long>(i) * ldc;
    for (int j = 0; j < n; ++j)
      crow[j] = static_cast<float>(alpha * acc[j] + (beta == 0.0f ? 0.0 : double(beta) * crow[j]));
  }
}

}  // namespace

void cblas_sgemm(const enum CBLAS_ORDER order, const enum CBLAS_TRANSPOSE trans_a, const enum CBLAS_TRANSPOSE trans_b,
                 const blasint m, const blasint n, const blasint k, const float alpha, const float* a,
                 const blasint lda, const float* b, const blasint ldb, const float beta, float* c, const blasint ldc) {
  const bool ta = trans_a != CblasNoTrans, tb = trans_b != CblasNoTrans;
  if (order == CblasRowMajor)
    sgemm_row_major(ta, tb, int(m), int(n), int(k), alpha, a, int(lda), b, int(ldb), beta, c, int(ldc));
  else  // column-major C = op(A) op(B) is row-major C^T = op(B)^T op(A)^T
    sgemm_row_major(tb, ta, int(n), int(m), int(k), alpha, b, int(ldb), a, int(lda), beta, c, int(ldc));
}

void openblas_set_num_threads(int) {}
int openblas_get_num_threads(void) { return 1; }
