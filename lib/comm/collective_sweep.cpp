// sweep_allreduce (collective_sweep.h): bench_allreduce at every size and algorithm, out of place then
// in place, and rank 0's table or JSON lines.
#include "lib/comm/collective_sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string_view>

#include "lib/comm/collective_bench.h"

namespace dp {
namespace {

std::string row_json(const CollectiveBenchResult& r, std::string_view algorithm, int ranks, bool in_place) {
  return fmt::format(R"({{"algorithm": "{}", "in_place": {}, "bytes": {}, "count": {}, "ranks": {}, )"
                     R"("time_us": {:.3f}, "algbw": {:.4f}, "busbw": {:.4f}, "wrong": {}}})",
                     algorithm, in_place, r.bytes, r.count, ranks, r.time_us, r.algbw, r.busbw, r.wrong);
}

void print_header(const Communicator& comm, const CollectiveSweep& s, std::FILE* out) {
  std::fprintf(out, "# dptrain profile --collectives: allreduce (sum) of float32 on %d rank(s), host %s%s\n",
               comm.size(), comm.host().c_str(), s.links.empty() ? "" : (", " + s.links).c_str());
  std::fprintf(out, "# busbw = algbw * 2(n-1)/n; #wrong counts elements that differ from the exact sum\n");
  std::fprintf(out, "#%11s %12s %9s | %s | %s\n", "size", "count", "algorithm",
               "out-of-place: time(us) algbw(GB/s) busbw(GB/s) #wrong", "in-place: time(us) algbw busbw #wrong");
}

// One algorithm at one size, out of place and in place.
struct Measured {
  CollectiveBenchResult out, in;
};

Measured measure(Communicator& comm, const CollectiveSweep& s, const std::string& name, int64_t bytes) {
  CollectiveBenchConfig cfg;
  cfg.algorithm = parse_collective_algorithm(name);
  cfg.bytes = size_t(bytes);
  // Fewer repetitions for large buffers: about 1 GB moved per measurement, between 3 and `iterations`.
  const int64_t by_volume = (int64_t(1) << 30) / bytes;
  cfg.iterations = int(std::clamp<int64_t>(by_volume, std::min(3, s.iterations), s.iterations));
  cfg.warmup = std::min(s.warmup, cfg.iterations);
  cfg.in_place = false;
  Measured m;
  m.out = bench_allreduce(comm, cfg);
  cfg.in_place = true;
  m.in = bench_allreduce(comm, cfg);
  return m;
}

void print_row(const Measured& m, const std::string& name, int ranks, bool json, std::FILE* out) {
  if (json) {
    std::fprintf(out, "%s\n%s\n", row_json(m.out, name, ranks, false).c_str(),
                 row_json(m.in, name, ranks, true).c_str());
    return;
  }
  std::fprintf(out, " %11zu %12zu %9s | %11.2f %8.3f %8.3f %6lld | %11.2f %8.3f %8.3f %6lld\n", m.out.bytes,
               m.out.count, name.c_str(), m.out.time_us, m.out.algbw, m.out.busbw, (long long)m.out.wrong,
               m.in.time_us, m.in.algbw, m.in.busbw, (long long)m.in.wrong);
}

}  // namespace

int64_t sweep_allreduce(Communicator& comm, const CollectiveSweep& s, std::FILE* out) {
  const bool leader = comm.rank() == 0;
  const bool table = leader && !s.json;
  if (table) print_header(comm, s, out);
  std::map<std::string, double> busbw_sum;  // over sizes, for the averages
  std::map<std::string, int> rows;
  int64_t wrong_total = 0;
  for (int64_t bytes = s.min_bytes; bytes <= s.max_bytes; bytes *= s.factor) {
    std::map<std::string, double> busbw_here;
    for (const std::string& name : s.algorithms) {
      const Measured m = measure(comm, s, name, bytes);
      wrong_total += m.out.wrong + m.in.wrong;
      busbw_sum[name] += m.out.busbw;
      rows[name]++;
      busbw_here[name] = m.out.busbw;
      if (leader) print_row(m, name, comm.size(), s.json, out);
    }
    if (table && busbw_here.count("ring") && busbw_here.count("native") && busbw_here["native"] > 0)
      std::fprintf(out, " %11s %12s %9s   ring/native busbw %.2fx\n", "", "", "",
                   busbw_here["ring"] / busbw_here["native"]);
    if (leader) std::fflush(out);
  }
  if (table) {
    for (const auto& [name, sum] : busbw_sum)
      std::fprintf(out, "# %s: average busbw %.3f GB/s over %d sizes\n", name.c_str(), sum / rows[name], rows[name]);
    std::fprintf(out, "# wrong elements: %lld\n", (long long)wrong_total);
  }
  return wrong_total;
}

}  // namespace dp
