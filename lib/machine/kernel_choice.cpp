// Which OpenBLAS kernel set a rank should run: a pure function of the CPU, the library's answer and the
// environment (machine.h). The kernel sets are OpenBLAS's DYNAMIC_ARCH targets for x86-64 with what
// their kernels execute; a set is runnable when the CPU has those instructions and the library's version
// carries the set.
#include <array>
#include <cstdio>
#include <strings.h>

#include "lib/machine/machine.h"

namespace dp::machine {

namespace {

struct KernelSet {
  const char* name;
  int level;                       // instruction-set level of its kernels: higher runs faster GEMMs
  std::array<int, 3> since;        // first OpenBLAS version with the set in DYNAMIC_ARCH
  bool (*runs)(const Isa&);
  bool candidate;                  // dptrain may choose it (the others are only recognised)
};

const std::vector<KernelSet>& kernel_sets() {
  static const std::vector<KernelSet> sets{
      {"SapphireRapids", 9, {0, 3, 22},
       [](const Isa& i) { return i.avx512() && i.avx512_bf16 && i.amx_tile && i.amx_bf16; }, true},
      {"Cooperlake", 8, {0, 3, 11}, [](const Isa& i) { return i.avx512() && i.avx512_bf16; }, true},
      {"SkylakeX", 7, {0, 3, 0}, [](const Isa& i) { return i.avx512(); }, true},
      {"Haswell", 6, {0, 2, 9}, [](const Isa& i) { return i.avx2 && i.fma; }, true},
      {"Zen", 6, {0, 2, 20}, [](const Isa& i) { return i.avx2 && i.fma; }, false},
      {"Sandybridge", 5, {0, 2, 0}, [](const Isa& i) { return i.avx; }, true},
      {"Bulldozer", 5, {0, 2, 0}, [](const Isa& i) { return i.avx; }, false},
      {"Piledriver", 5, {0, 2, 0}, [](const Isa& i) { return i.avx && i.fma; }, false},
      {"Steamroller", 5, {0, 2, 0}, [](const Isa& i) { return i.avx && i.fma; }, false},
      {"Excavator", 5, {0, 2, 0}, [](const Isa& i) { return i.avx2 && i.fma; }, false},
      {"Nehalem", 4, {0, 2, 0}, [](const Isa& i) { return i.sse4_2 && i.popcnt; }, true},
      {"Dunnington", 3, {0, 2, 0}, [](const Isa& i) { return i.sse4_1; }, false},
      {"Penryn", 3, {0, 2, 0}, [](const Isa& i) { return i.sse4_1; }, true},
      {"Core2", 2, {0, 2, 0}, [](const Isa& i) { return i.ssse3; }, true},
      {"Atom", 2, {0, 2, 0}, [](const Isa& i) { return i.ssse3; }, false},
      {"Bobcat", 2, {0, 2, 0}, [](const Isa& i) { return i.ssse3; }, false},
      {"Barcelona", 1, {0, 2, 0}, [](const Isa& i) { return i.sse3; }, false},
      {"Opteron_SSE3", 1, {0, 2, 0}, [](const Isa& i) { return i.sse3; }, false},
      {"Prescott", 1, {0, 2, 0}, [](const Isa& i) { return i.sse3; }, true},
      {"Opteron", 0, {0, 2, 0}, [](const Isa&) { return true; }, false},
      {"Katmai", 0, {0, 2, 0}, [](const Isa&) { return true; }, false},
  };
  return sets;
}

bool same_name(const std::string& a, const std::string& b) { return strcasecmp(a.c_str(), b.c_str()) == 0; }

const KernelSet* find_set(const std::string& name) {
  for (const KernelSet& k : kernel_sets())
    if (same_name(name, k.name)) return &k;
  return nullptr;
}

std::array<int, 3> parse_version(const std::string& v) {
  std::array<int, 3> out{0, 0, 0};
  std::sscanf(v.c_str(), "%d.%d.%d", &out[0], &out[1], &out[2]);
  return out;
}

KernelChoice keep(std::string best, std::string source, std::string reason) {
  return {KernelChoice::Action::keep, "", std::move(best), std::move(source), std::move(reason)};
}

}  // namespace

std::vector<std::string> runnable_openblas_kernels(const CpuInfo& cpu, const std::string& version) {
  const auto v = parse_version(version);
  std::vector<std::string> out;
  for (const KernelSet& k : kernel_sets())
    if (k.candidate && v >= k.since && k.runs(cpu.isa)) out.emplace_back(k.name);
  return out;
}

KernelChoice choose_blas_kernels(const CpuInfo& cpu, const BlasInfo& blas, const KernelEnv& env) {
  if (blas.library != "OpenBLAS") return keep("", "library", "");
  const std::vector<std::string> runnable = runnable_openblas_kernels(cpu, blas.version);
  const std::string best = runnable.empty() ? "" : runnable.front();
  if (!blas.dynamic_arch) return keep(best, "library", "built for one kernel set");

  const std::string request = env.request.value_or("auto");
  const bool ours = env.chosen && env.openblas_coretype && same_name(*env.chosen, *env.openblas_coretype);
  const std::string user = env.openblas_coretype && !ours ? "OPENBLAS_CORETYPE" : "";
  const KernelSet* current = find_set(blas.kernels);
  const KernelSet* best_set = find_set(best);
  const bool below_best = current && best_set && current->level < best_set->level;
  if (same_name(request, "library"))
    return keep(best, user.empty() ? "library" : user,
                env.rejected ? *env.rejected + " kernels computed wrong products here"
                             : (below_best ? "this CPU can run " + best : ""));

  std::string target = best, source = "dptrain";
  if (!same_name(request, "auto")) {
    // Any set OpenBLAS has may be asked for (Zen on a Zen CPU too); dptrain chooses only among candidates.
    const KernelSet* asked = find_set(request);
    if (!asked) {
      std::string names;
      for (const KernelSet& k : kernel_sets())
        if (k.candidate) names += std::string(names.empty() ? "" : ", ") + k.name;
      return {KernelChoice::Action::refuse, "", best, "DPTRAIN_BLAS_KERNELS",
              "DPTRAIN_BLAS_KERNELS=" + request + " names no OpenBLAS kernel set; use auto, library or one of: " +
                  names};
    }
    if (parse_version(blas.version) < asked->since || !asked->runs(cpu.isa))
      return {KernelChoice::Action::refuse, "", best, "DPTRAIN_BLAS_KERNELS",
              "DPTRAIN_BLAS_KERNELS=" + request + ": " +
                  (parse_version(blas.version) < asked->since ? "OpenBLAS " + blas.version + " has no such kernels"
                                                              : "this CPU lacks their instructions") +
                  "; it can run: " + (best.empty() ? std::string("none") : best) + " and below"};
    target = asked->name;
    source = "DPTRAIN_BLAS_KERNELS";
  } else if (!user.empty()) {
    return keep(best, user, below_best ? "this CPU can run " + best : "");
  }
  if (target.empty()) return keep(best, "library", "");

  // The set asked for is running: it is the request's whoever loaded it (the library may have picked the
  // same set itself, as it does on a CPU it mis-detects), dptrain's when dptrain exported it.
  const bool requested = source == "DPTRAIN_BLAS_KERNELS";
  const bool set_by_us = env.chosen && same_name(*env.chosen, target);
  if (same_name(blas.kernels, target))
    return keep(best, requested || set_by_us ? source : "library",
                set_by_us && env.library_pick ? "instead of " + *env.library_pick : "");
  // auto: a set the library picked that is as good and runs here (its own tuning, such as Zen), or one
  // dptrain does not know (a newer library's), stays.
  if (source == "dptrain" && (!current || !best_set || (current->level >= best_set->level && current->runs(cpu.isa))))
    return keep(best, "library", "");
  if (env.reexecuted)
    return keep(best, "library", "the library did not take OPENBLAS_CORETYPE=" + target);
  return {KernelChoice::Action::reexec, target, best, source,
          "the library picked " + (blas.kernels.empty() ? std::string("an unknown set") : blas.kernels) +
              (source == "dptrain" ? "; this CPU can run " + target : "")};
}

}  // namespace dp::machine
