// A rank's machine as one line (printed when a run starts, and by --version) and as summary.json's object.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "lib/core/json.h"
#include "lib/machine/machine.h"

namespace dp::machine {


MachineReport report_machine() {
  MachineReport r;
  r.cpu = probe_cpu();
  r.blas = probe_blas();
  r.choice = choose_blas_kernels(r.cpu, r.blas, read_kernel_env());
  r.threads = r.blas.threads;
  return r;
}

std::string MachineReport::line() const {
  std::string blas_text;
  if (blas.library != "OpenBLAS") {
    blas_text = "BLAS: not OpenBLAS (kernels unknown)";
  } else {
    std::string why = choice.source == "library"             ? "the library's choice"
                      : choice.source == "dptrain"           ? "chosen by dptrain"
                      : choice.source == "OPENBLAS_CORETYPE" ? "OPENBLAS_CORETYPE, set by the user, is kept"
                                                             : "set by " + choice.source;
    if (!choice.reason.empty()) why += "; " + choice.reason;
    blas_text = fmt::format("OpenBLAS {} {} kernels ({})", blas.version, blas.kernels, why);
  }
  return fmt::format("{} (family {} model {}), {}; {}, {} thread{}{}", cpu.model_name, cpu.family, cpu.model,
                     cpu.isa.describe(), blas_text, threads, threads == 1 ? "" : "s",
                     convolutions.empty() ? "" : "; convolutions: " + convolutions);
}

std::string MachineReport::json() const {
  std::vector<std::string> isa;
  for (const std::string& n : cpu.isa.names()) isa.push_back(json_quoted(n));
  return fmt::format(
      "{{\"cpu\": {}, \"vendor\": {}, \"family\": {}, \"model\": {}, \"isa\": [{}], \"blas\": {}, "
      "\"blas_version\": {}, \"blas_kernels\": {}, \"blas_kernels_best\": {}, \"blas_kernels_source\": {}, "
      "\"threads\": {}, \"convolutions\": {}}}",
      json_quoted(cpu.model_name), json_quoted(cpu.vendor), cpu.family, cpu.model, fmt::join(isa, ", "), json_quoted(blas.library),
      json_quoted(blas.version), json_quoted(blas.kernels), json_quoted(choice.best), json_quoted(choice.source), threads,
      json_quoted(convolutions));
}

}  // namespace dp::machine
