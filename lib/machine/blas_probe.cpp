// The BLAS library's own answers (OpenBLAS's openblas_get_* queries, looked up at run time so that any
// BLAS behind the cblas interface is reported rather than assumed), the environment the kernel choice
// reads, and a check that the kernels in use compute correct products.
#include <cblas.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "lib/machine/machine.h"

namespace dp::machine {

namespace {

template <class Fn>
Fn lookup(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

std::optional<std::string> env_value(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

}  // namespace

BlasInfo probe_blas() {
  BlasInfo b;
  const auto corename = lookup<char* (*)()>("openblas_get_corename");
  const auto config = lookup<char* (*)()>("openblas_get_config");
  const auto threads = lookup<int (*)()>("openblas_get_num_threads");
  if (!corename || !config) {
    b.library = "unknown";
    return b;
  }
  b.library = "OpenBLAS";
  b.kernels = corename();
  std::istringstream words(config());  // "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Haswell ..."
  std::string word;
  words >> word >> b.version;
  while (words >> word)
    if (word == "DYNAMIC_ARCH") b.dynamic_arch = true;
  if (threads) b.threads = threads();
  return b;
}

KernelEnv read_kernel_env() {
  KernelEnv e;
  e.openblas_coretype = env_value("OPENBLAS_CORETYPE");
  e.request = env_value("DPTRAIN_BLAS_KERNELS");
  e.chosen = env_value("DPTRAIN_BLAS_CHOSEN");
  e.rejected = env_value("DPTRAIN_BLAS_REJECTED");
  e.library_pick = env_value("DPTRAIN_BLAS_LIBRARY_PICK");
  e.reexecuted = env_value("DPTRAIN_BLAS_REEXEC") == std::to_string(getpid());
  return e;
}

bool blas_products_correct() {
  // Sizes that leave remainders in every blocking, both transposes the kernels use, beta 0 and 1.
  struct Case {
    int m, n, k;
    bool ta, tb;
    float beta;
  };
  for (const Case& c : {Case{37, 29, 53, false, false, 0.0f}, Case{130, 70, 200, false, true, 1.0f},
                        Case{64, 33, 96, true, false, 1.0f}, Case{5, 300, 17, true, true, 0.0f}}) {
    std::vector<float> a(size_t(c.m * c.k)), b(size_t(c.k * c.n)), y(size_t(c.m * c.n)), ref(y.size());
    for (size_t i = 0; i < a.size(); ++i) a[i] = float(int(i * 7 % 13) - 6) / 8.0f;
    for (size_t i = 0; i < b.size(); ++i) b[i] = float(int(i * 5 % 11) - 5) / 4.0f;
    for (size_t i = 0; i < y.size(); ++i) y[i] = ref[i] = float(int(i % 5) - 2);
    // a is (m, k) or, transposed, stored (k, m); b is (k, n) or stored (n, k).
    for (int i = 0; i < c.m; ++i)
      for (int j = 0; j < c.n; ++j) {
        double sum = 0;
        for (int p = 0; p < c.k; ++p)
          sum += double(c.ta ? a[size_t(p * c.m + i)] : a[size_t(i * c.k + p)]) *
                 double(c.tb ? b[size_t(j * c.k + p)] : b[size_t(p * c.n + j)]);
        ref[size_t(i * c.n + j)] = float(sum + c.beta * ref[size_t(i * c.n + j)]);
      }
    cblas_sgemm(CblasRowMajor, c.ta ? CblasTrans : CblasNoTrans, c.tb ? CblasTrans : CblasNoTrans, c.m, c.n, c.k,
                1.0f, a.data(), c.ta ? c.m : c.k, b.data(), c.tb ? c.k : c.n, c.beta, y.data(), c.n);
    for (size_t i = 0; i < y.size(); ++i)  // the inputs are exact in binary: only rounding of sums differs
      if (!(std::abs(y[i] - ref[i]) <= 1e-4f * (1.0f + std::abs(ref[i])))) return false;
  }
  return true;
}

}  // namespace dp::machine
