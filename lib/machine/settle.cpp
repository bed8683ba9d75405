// Puts the kernel choice into effect before anything else runs: when choose_blas_kernels says so, the
// process re-executes itself (same pid, same arguments, so an MPI launcher still knows it) with
// OPENBLAS_CORETYPE set, which OpenBLAS reads when it is loaded. Kernels dptrain chose must then pass
// blas_products_correct(); when they fail, the process runs again on the library's own pick.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "lib/core/error.h"
#include "lib/machine/machine.h"

namespace dp::machine {

namespace {

[[noreturn]] void reexec(char** argv) {
  setenv("DPTRAIN_BLAS_REEXEC", std::to_string(getpid()).c_str(), 1);
  std::fflush(nullptr);
  execv("/proc/self/exe", argv);
  throw RuntimeFailure("re-executing dptrain with other BLAS kernels", "execv(/proc/self/exe) failed",
                       "set DPTRAIN_BLAS_KERNELS=library to keep the library's kernels");
}

}  // namespace

void settle_blas_kernels(char** argv) {
  const KernelEnv env = read_kernel_env();
  const BlasInfo blas = probe_blas();
  const KernelChoice choice = choose_blas_kernels(probe_cpu(), blas, env);
  switch (choice.action) {
    case KernelChoice::Action::refuse:
      throw UsageError("DPTRAIN_BLAS_KERNELS", choice.reason, "unset it to let dptrain choose");
    case KernelChoice::Action::reexec:
      setenv("OPENBLAS_CORETYPE", choice.coretype.c_str(), 1);
      setenv("DPTRAIN_BLAS_CHOSEN", choice.coretype.c_str(), 1);
      if (!env.chosen) setenv("DPTRAIN_BLAS_LIBRARY_PICK", blas.kernels.c_str(), 1);
      reexec(argv);
    case KernelChoice::Action::keep:
      break;
  }
  if (blas_products_correct()) return;
  // The kernels in use are dptrain's when the choice says so (a set the library ignored is its own).
  const bool dptrain_chose = choice.source == "dptrain" || choice.source == "DPTRAIN_BLAS_KERNELS";
  if (!dptrain_chose)
    throw RuntimeFailure("BLAS self-check", "OpenBLAS's " + blas.kernels + " kernels compute wrong matrix products on this CPU",
                         "set OPENBLAS_CORETYPE to another kernel set this CPU runs (e.g. Haswell or Prescott)");
  // dptrain's choice is wrong here: the library's own pick, and say so.
  setenv("DPTRAIN_BLAS_REJECTED", blas.kernels.c_str(), 1);
  setenv("DPTRAIN_BLAS_KERNELS", "library", 1);
  unsetenv("DPTRAIN_BLAS_CHOSEN");
  unsetenv("DPTRAIN_BLAS_LIBRARY_PICK");
  unsetenv("OPENBLAS_CORETYPE");
  reexec(argv);
}

}  // namespace dp::machine
