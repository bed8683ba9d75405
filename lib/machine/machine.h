// What this rank computes on, and which BLAS kernels it runs. The CPU's model and instruction sets come
// from cpuid (cpu_probe.cpp); the BLAS library's answer from its own queries (blas_probe.cpp). OpenBLAS
// built with DYNAMIC_ARCH (Debian's) picks a kernel set from the CPU model once, when it is loaded, and
// falls back to old SSE3 kernels for models it does not know; choose_blas_kernels (kernel_choice.cpp, a
// pure function) says when a better set exists, and settle_blas_kernels (settle.cpp) then re-executes the
// process with OPENBLAS_CORETYPE set, before MPI starts, so that it works on every rank under any
// launcher (dptrain's own mpirun, a foreign mpirun, srun). A setting the user made is kept.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dp::machine {

// Instruction-set extensions that decide which kernels can run (usable: the OS saves their registers).
struct Isa {
  bool sse3 = false, ssse3 = false, sse4_1 = false, sse4_2 = false, popcnt = false;
  bool avx = false, avx2 = false, fma = false;
  bool avx512f = false, avx512cd = false, avx512bw = false, avx512dq = false, avx512vl = false;
  bool avx512_vnni = false, avx512_bf16 = false, avx512_fp16 = false, amx_tile = false, amx_bf16 = false;
  bool avx512() const { return avx512f && avx512cd && avx512bw && avx512dq && avx512vl; }
  // "avx512 (bf16, vnni)", "avx2 fma", "sse4.2": the best level and its notable extras.
  std::string describe() const;
  // Every extension present, by its /proc/cpuinfo name, for summary.json.
  std::vector<std::string> names() const;
};

struct CpuInfo {
  std::string vendor;  // "GenuineIntel", "AuthenticAMD"
  std::string model_name;  // the brand string
  int family = 0, model = 0, stepping = 0;  // display family and model, as /proc/cpuinfo shows them
  Isa isa;
};

struct BlasInfo {
  std::string library;  // "OpenBLAS", or "unknown" when the linked BLAS answers no OpenBLAS query
  std::string version;  // "0.3.21"
  std::string kernels;  // the kernel set in use ("Haswell"); empty when unknown
  bool dynamic_arch = false;  // the library carries several kernel sets and picks one at load time
  int threads = 0;
};

// The environment that decides: what the user set, and what dptrain set in an earlier exec.
struct KernelEnv {
  std::optional<std::string> openblas_coretype;  // OPENBLAS_CORETYPE
  std::optional<std::string> request;            // DPTRAIN_BLAS_KERNELS: "auto" (default), "library", a set
  std::optional<std::string> chosen;             // DPTRAIN_BLAS_CHOSEN: the set dptrain exported
  std::optional<std::string> rejected;           // DPTRAIN_BLAS_REJECTED: dptrain's set that failed its check
  std::optional<std::string> library_pick;       // DPTRAIN_BLAS_LIBRARY_PICK: the set the library took itself
  bool reexecuted = false;                       // this process is the one dptrain re-executed
};

struct KernelChoice {
  enum class Action { keep, reexec, refuse };
  Action action = Action::keep;
  std::string coretype;  // reexec: OPENBLAS_CORETYPE for the new image
  std::string best;      // the best set this CPU can run and this library has ("" when not OpenBLAS)
  std::string source;    // who chose the set in use: "library", "dptrain", or the variable that did
                         // ("OPENBLAS_CORETYPE", set by the user; "DPTRAIN_BLAS_KERNELS")
  std::string reason;    // one clause saying why (refuse: what is wrong, naming the variable)
};

// OpenBLAS kernel sets this CPU can run, best first, among those the library's version carries.
std::vector<std::string> runnable_openblas_kernels(const CpuInfo& cpu, const std::string& version);
// The decision (pure): keep the kernels in use, re-execute with better ones, or refuse a request the CPU
// cannot run (SIGILL otherwise) or that names no kernel set.
KernelChoice choose_blas_kernels(const CpuInfo& cpu, const BlasInfo& blas, const KernelEnv& env);

CpuInfo probe_cpu();
BlasInfo probe_blas();
KernelEnv read_kernel_env();
// A small sgemm against a plain triple loop: false when the kernels in use compute wrong products.
bool blas_products_correct();

// Called first thing in main: may re-execute the process (and so not return) with better kernels, or
// with the library's own after the chosen ones failed blas_products_correct(). Throws UsageError for a
// DPTRAIN_BLAS_KERNELS the CPU cannot run.
void settle_blas_kernels(char** argv);

// One rank's machine, as the run's line and summary.json give it.
struct MachineReport {
  CpuInfo cpu;
  BlasInfo blas;
  KernelChoice choice;
  std::string convolutions;  // filled in by the caller (kernels/cpu knows it)
  int threads = 0;           // compute threads per rank (OpenBLAS's pool, which set_compute_threads sizes)
  // "AMD EPYC (family 26 model 2), avx512 (bf16, vnni); OpenBLAS 0.3.21 Cooperlake kernels (library's
  // choice), 1 thread; convolutions: oneDNN 2.6.3 (jit:avx512_core)"
  std::string line() const;
  std::string json() const;  // one JSON object
};
MachineReport report_machine();  // cpu, blas and the choice in effect, read afresh

}  // namespace dp::machine
