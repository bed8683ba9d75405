// choose_blas_kernels over a table of CPUs, library answers and environments: which OpenBLAS kernel set a
// rank runs, who chose it, and when dptrain re-executes itself. Also the probes on this machine.
#define BOOST_TEST_MODULE machine_kernel_choice
#include <boost/test/unit_test.hpp>

#include "lib/machine/machine.h"

using dp::machine::BlasInfo;
using dp::machine::CpuInfo;
using dp::machine::Isa;
using dp::machine::KernelChoice;
using dp::machine::KernelEnv;
using Action = KernelChoice::Action;

namespace {

Isa sse3_only() {
  Isa i;
  i.sse3 = true;
  return i;
}
Isa avx2() {
  Isa i = sse3_only();
  i.ssse3 = i.sse4_1 = i.sse4_2 = i.popcnt = i.avx = i.avx2 = i.fma = true;
  return i;
}
Isa avx512(bool bf16) {
  Isa i = avx2();
  i.avx512f = i.avx512cd = i.avx512bw = i.avx512dq = i.avx512vl = i.avx512_vnni = true;
  i.avx512_bf16 = bf16;
  return i;
}

CpuInfo cpu(const char* vendor, int family, int model, Isa isa) { return {vendor, "test CPU", family, model, 1, isa}; }
BlasInfo openblas(const char* kernels, const char* version = "0.3.21") { return {"OpenBLAS", version, kernels, true, 1}; }

struct Row {
  const char* what;
  CpuInfo cpu;
  BlasInfo blas;
  KernelEnv env;
  Action action;
  const char* coretype;  // reexec: the set exported
  const char* source;
  const char* best;
};

KernelEnv env_with(std::optional<std::string> coretype, std::optional<std::string> request = {},
                   std::optional<std::string> chosen = {}, bool reexecuted = false) {
  KernelEnv e;
  e.openblas_coretype = std::move(coretype);
  e.request = std::move(request);
  e.chosen = std::move(chosen);
  e.reexecuted = reexecuted;
  return e;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_table) {
  const CpuInfo emerald = cpu("GenuineIntel", 6, 207, avx512(true));  // unknown to OpenBLAS 0.3.21
  const CpuInfo skylake = cpu("GenuineIntel", 6, 85, avx512(false));
  const CpuInfo zen3 = cpu("AuthenticAMD", 25, 1, avx2());
  const CpuInfo zen5 = cpu("AuthenticAMD", 26, 2, avx512(true));
  const CpuInfo old = cpu("GenuineIntel", 15, 4, sse3_only());
  const std::vector<Row> rows{
      {"new Xeon, the library fell back to SSE3: re-exec", emerald, openblas("Prescott"), env_with({}),
       Action::reexec, "Cooperlake", "dptrain", "Cooperlake"},
      {"after the re-exec the choice is in effect", emerald, openblas("Cooperlake"),
       env_with("Cooperlake", {}, "Cooperlake", true), Action::keep, "", "dptrain", "Cooperlake"},
      {"the library ignored OPENBLAS_CORETYPE: no second exec", emerald, openblas("Prescott"),
       env_with("Cooperlake", {}, "Cooperlake", true), Action::keep, "", "library", "Cooperlake"},
      {"the user's OPENBLAS_CORETYPE is kept", emerald, openblas("Prescott"), env_with("Prescott"), Action::keep,
       "", "OPENBLAS_CORETYPE", "Cooperlake"},
      {"the user's setting is kept even when it is the best", emerald, openblas("Cooperlake"),
       env_with("Cooperlake"), Action::keep, "", "OPENBLAS_CORETYPE", "Cooperlake"},
      {"a rank inheriting dptrain's export re-decides for its own CPU", skylake, openblas("Cooperlake"),
       env_with("Cooperlake", {}, "Cooperlake"), Action::reexec, "SkylakeX", "dptrain", "SkylakeX"},
      {"a rank inheriting dptrain's export that fits keeps it", emerald, openblas("Cooperlake"),
       env_with("Cooperlake", {}, "Cooperlake"), Action::keep, "", "dptrain", "Cooperlake"},
      {"the library's own good pick stays", skylake, openblas("SkylakeX"), env_with({}), Action::keep, "",
       "library", "SkylakeX"},
      {"Zen kernels are as good as Haswell's on an AVX2 CPU", zen3, openblas("Zen"), env_with({}), Action::keep,
       "", "library", "Haswell"},
      {"a set the decision does not know stays", zen5, openblas("Zen6"), env_with({}), Action::keep, "", "library",
       "Cooperlake"},
      {"a newer library carries SapphireRapids: not this CPU (no AMX)", emerald, openblas("Haswell", "0.3.26"),
       env_with({}), Action::reexec, "Cooperlake", "dptrain", "Cooperlake"},
      {"an older library has no Cooperlake", emerald, openblas("Prescott", "0.3.10"), env_with({}), Action::reexec,
       "SkylakeX", "dptrain", "SkylakeX"},
      {"an SSE3 CPU runs Prescott already", old, openblas("Prescott"), env_with({}), Action::keep, "", "library",
       "Prescott"},
      {"DPTRAIN_BLAS_KERNELS asks for a lesser set", zen5, openblas("Cooperlake"), env_with({}, "Haswell"),
       Action::reexec, "Haswell", "DPTRAIN_BLAS_KERNELS", "Cooperlake"},
      {"DPTRAIN_BLAS_KERNELS, names in any case", zen5, openblas("Haswell"), env_with({}, "haswell"), Action::keep,
       "", "DPTRAIN_BLAS_KERNELS", "Cooperlake"},
      // A request is the user's whatever the library would have picked: on a CPU OpenBLAS 0.3.21 does not
      // know (this Xeon) it picks Prescott itself, and asking for Prescott changes no kernels but is still
      // the request; on a CPU it knows, asking for its own pick, or for dptrain's, is the request too.
      {"request equals the library's mis-detected pick", emerald, openblas("Prescott"), env_with({}, "Prescott"),
       Action::keep, "", "DPTRAIN_BLAS_KERNELS", "Cooperlake"},
      {"request equals the pick of a library that knows the CPU", skylake, openblas("SkylakeX"),
       env_with({}, "skylakex"), Action::keep, "", "DPTRAIN_BLAS_KERNELS", "SkylakeX"},
      {"request equals dptrain's own pick: exported as the request", emerald, openblas("Prescott"),
       env_with({}, "Cooperlake"), Action::reexec, "Cooperlake", "DPTRAIN_BLAS_KERNELS", "Cooperlake"},
      {"request equals dptrain's own pick, after the re-exec", emerald, openblas("Cooperlake"),
       env_with("Cooperlake", "Cooperlake", "Cooperlake", true), Action::keep, "", "DPTRAIN_BLAS_KERNELS",
       "Cooperlake"},
      {"a request on a recognised CPU (Zen 3: the library's Zen, asked Haswell)", zen3, openblas("Zen"),
       env_with({}, "Haswell"), Action::reexec, "Haswell", "DPTRAIN_BLAS_KERNELS", "Haswell"},
      {"a set dptrain never chooses may be asked for (Zen on a Zen CPU)", zen3, openblas("Haswell"),
       env_with({}, "zen"), Action::reexec, "Zen", "DPTRAIN_BLAS_KERNELS", "Haswell"},
      {"the library's own Zen pick, asked for, is the request's", zen3, openblas("Zen"), env_with({}, "Zen"),
       Action::keep, "", "DPTRAIN_BLAS_KERNELS", "Haswell"},
      {"auto is no request: the library's good pick stays the library's", skylake, openblas("SkylakeX"),
       env_with({}, "auto"), Action::keep, "", "library", "SkylakeX"},
      {"auto is no request on the mis-detected CPU either: dptrain chooses", emerald, openblas("Prescott"),
       env_with({}, "AUTO"), Action::reexec, "Cooperlake", "dptrain", "Cooperlake"},
      {"DPTRAIN_BLAS_KERNELS overrides the user's OPENBLAS_CORETYPE", zen5, openblas("Haswell"),
       env_with("Haswell", "SkylakeX"), Action::reexec, "SkylakeX", "DPTRAIN_BLAS_KERNELS", "Cooperlake"},
      {"DPTRAIN_BLAS_KERNELS=library keeps anything", emerald, openblas("Prescott"), env_with({}, "library"),
       Action::keep, "", "library", "Cooperlake"},
      {"a set the CPU cannot run is refused (SIGILL otherwise)", zen3, openblas("Zen"), env_with({}, "SkylakeX"),
       Action::refuse, "", "DPTRAIN_BLAS_KERNELS", "Haswell"},
      {"a set the library lacks is refused", emerald, openblas("Cooperlake"), env_with({}, "SapphireRapids"),
       Action::refuse, "", "DPTRAIN_BLAS_KERNELS", "Cooperlake"},
      {"a name that is no kernel set is refused", emerald, openblas("Cooperlake"), env_with({}, "Skylake-X"),
       Action::refuse, "", "DPTRAIN_BLAS_KERNELS", "Cooperlake"},
      {"not OpenBLAS: nothing to choose", emerald, BlasInfo{"unknown", "", "", false, 0}, env_with({}),
       Action::keep, "", "library", ""},
      {"OpenBLAS without DYNAMIC_ARCH has one set", emerald, BlasInfo{"OpenBLAS", "0.3.21", "Prescott", false, 1},
       env_with({}), Action::keep, "", "library", "Cooperlake"},
  };
  for (const Row& r : rows) {
    BOOST_TEST_CONTEXT(r.what) {
      const KernelChoice c = dp::machine::choose_blas_kernels(r.cpu, r.blas, r.env);
      BOOST_TEST(int(c.action) == int(r.action));
      BOOST_TEST(c.coretype == r.coretype);
      BOOST_TEST(c.source == r.source);
      BOOST_TEST(c.best == r.best);
      if (c.action == Action::refuse) BOOST_TEST(c.reason.find("DPTRAIN_BLAS_KERNELS=") == 0);
    }
  }
}

BOOST_AUTO_TEST_CASE(runnable_sets_follow_the_instructions) {
  using V = std::vector<std::string>;
  BOOST_TEST(dp::machine::runnable_openblas_kernels(cpu("GenuineIntel", 6, 1, sse3_only()), "0.3.21") ==
             V{"Prescott"});
  BOOST_TEST(dp::machine::runnable_openblas_kernels(cpu("AuthenticAMD", 25, 1, avx2()), "0.3.21") ==
             (V{"Haswell", "Sandybridge", "Nehalem", "Penryn", "Core2", "Prescott"}));
  BOOST_TEST(dp::machine::runnable_openblas_kernels(cpu("GenuineIntel", 6, 85, avx512(false)), "0.3.21").front() ==
             "SkylakeX");
  Isa spr = avx512(true);
  spr.amx_tile = spr.amx_bf16 = true;
  BOOST_TEST(dp::machine::runnable_openblas_kernels(cpu("GenuineIntel", 6, 143, spr), "0.3.22").front() ==
             "SapphireRapids");
  BOOST_TEST(dp::machine::runnable_openblas_kernels(cpu("GenuineIntel", 6, 143, spr), "0.3.21").front() ==
             "Cooperlake");
}

// The probes on this machine: x86-64 has SSE3 at least, Debian's OpenBLAS answers, its products are right.
BOOST_AUTO_TEST_CASE(probes_on_this_machine) {
  const CpuInfo c = dp::machine::probe_cpu();
  BOOST_TEST(!c.model_name.empty());
  BOOST_TEST(c.isa.sse3);
  const BlasInfo b = dp::machine::probe_blas();
  BOOST_TEST(b.library == "OpenBLAS");
  BOOST_TEST(!b.kernels.empty());
  BOOST_TEST(b.version.find("0.3.") == 0);
  BOOST_TEST(dp::machine::blas_products_correct());
  dp::machine::MachineReport r = dp::machine::report_machine();
  BOOST_TEST(r.line().find(b.kernels + " kernels") != std::string::npos, r.line());
  BOOST_TEST_MESSAGE(r.line());
}
