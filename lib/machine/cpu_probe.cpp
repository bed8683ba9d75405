// The CPU's identity and usable instruction sets, from cpuid and (for the register state the OS saves)
// xgetbv. x86-64 only; elsewhere every extension reads as absent.
#include <cstring>

#include "lib/machine/machine.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace dp::machine {

namespace {

bool bit(unsigned reg, int n) { return (reg >> n) & 1u; }

std::string trimmed(std::string s) {
  const auto first = s.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  s = s.substr(first, s.find_last_not_of(' ') - first + 1);
  std::string out;  // brand strings pad with runs of spaces
  for (char c : s)
    if (c != ' ' || out.empty() || out.back() != ' ') out += c;
  return out;
}

}  // namespace

CpuInfo probe_cpu() {
  CpuInfo c;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, cx = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &cx, &d)) return c;
  const unsigned max_leaf = a;
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &cx, 4);
  c.vendor = vendor;

  __get_cpuid(1, &a, &b, &cx, &d);
  const unsigned base_family = (a >> 8) & 0xf, base_model = (a >> 4) & 0xf;
  c.family = int(base_family == 0xf ? base_family + ((a >> 20) & 0xff) : base_family);
  c.model = int(base_family == 0x6 || base_family == 0xf ? base_model | (((a >> 16) & 0xf) << 4) : base_model);
  c.stepping = int(a & 0xf);
  Isa& i = c.isa;
  i.sse3 = bit(cx, 0);
  i.ssse3 = bit(cx, 9);
  i.sse4_1 = bit(cx, 19);
  i.sse4_2 = bit(cx, 20);
  i.popcnt = bit(cx, 23);
  // AVX state needs OSXSAVE and XCR0's SSE and AVX bits; AVX-512 also its opmask and ZMM bits.
  unsigned long long xcr0 = 0;
  if (bit(cx, 27)) {
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (static_cast<unsigned long long>(hi) << 32) | lo;
  }
  const bool ymm = (xcr0 & 0x6) == 0x6, zmm = ymm && (xcr0 & 0xe0) == 0xe0,
             tiles = (xcr0 & 0x60000) == 0x60000;
  i.avx = ymm && bit(cx, 28);
  i.fma = ymm && bit(cx, 12);
  if (max_leaf >= 7) {
    __get_cpuid_count(7, 0, &a, &b, &cx, &d);
    i.avx2 = ymm && bit(b, 5);
    i.avx512f = zmm && bit(b, 16);
    i.avx512dq = zmm && bit(b, 17);
    i.avx512cd = zmm && bit(b, 28);
    i.avx512bw = zmm && bit(b, 30);
    i.avx512vl = zmm && bit(b, 31);
    i.avx512_vnni = zmm && bit(cx, 11);
    i.avx512_fp16 = zmm && bit(d, 23);
    i.amx_bf16 = tiles && bit(d, 22);
    i.amx_tile = tiles && bit(d, 24);
    const unsigned subleaves = a;
    if (subleaves >= 1) {
      __get_cpuid_count(7, 1, &a, &b, &cx, &d);
      i.avx512_bf16 = zmm && bit(a, 5);
    }
  }
  __get_cpuid(0x80000000, &a, &b, &cx, &d);
  if (a >= 0x80000004) {
    char brand[49] = {};
    for (unsigned leaf = 0; leaf < 3; ++leaf) {
      __get_cpuid(0x80000002 + leaf, &a, &b, &cx, &d);
      std::memcpy(brand + 16 * leaf, &a, 4);
      std::memcpy(brand + 16 * leaf + 4, &b, 4);
      std::memcpy(brand + 16 * leaf + 8, &cx, 4);
      std::memcpy(brand + 16 * leaf + 12, &d, 4);
    }
    c.model_name = trimmed(brand);
  }
#endif
  if (c.model_name.empty()) c.model_name = c.vendor.empty() ? "unknown CPU" : c.vendor;
  return c;
}

std::vector<std::string> Isa::names() const {
  const std::pair<bool, const char*> all[] = {
      {sse3, "sse3"},       {ssse3, "ssse3"},       {sse4_1, "sse4_1"},     {sse4_2, "sse4_2"},
      {popcnt, "popcnt"},   {avx, "avx"},           {avx2, "avx2"},         {fma, "fma"},
      {avx512f, "avx512f"}, {avx512cd, "avx512cd"}, {avx512bw, "avx512bw"}, {avx512dq, "avx512dq"},
      {avx512vl, "avx512vl"}, {avx512_vnni, "avx512_vnni"}, {avx512_bf16, "avx512_bf16"},
      {avx512_fp16, "avx512_fp16"}, {amx_tile, "amx_tile"}, {amx_bf16, "amx_bf16"}};
  std::vector<std::string> out;
  for (const auto& [has, name] : all)
    if (has) out.emplace_back(name);
  return out;
}

std::string Isa::describe() const {
  if (avx512()) {
    std::string extras;
    for (const auto& [has, name] : {std::pair{avx512_bf16, "bf16"}, {avx512_fp16, "fp16"}, {avx512_vnni, "vnni"},
                                    {amx_tile, "amx"}})
      if (has) extras += std::string(extras.empty() ? "" : ", ") + name;
    return extras.empty() ? "avx512" : "avx512 (" + extras + ")";
  }
  if (avx2 && fma) return "avx2 fma";
  if (avx) return "avx";
  if (sse4_2) return "sse4.2";
  if (ssse3) return "ssse3";
  if (sse3) return "sse3";
  return "sse2";
}

}  // namespace dp::machine
