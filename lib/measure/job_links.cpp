// [cluster.emulate]'s links over the launched communicator (see job_links.h).
#include "lib/measure/job_links.h"

#include <fmt/format.h>

#include <algorithm>

#include "lib/cluster/cluster.h"
#include "lib/comm/emulated_links.h"
#include "lib/core/error.h"

namespace dp {

namespace {
LinkModel job_link(const Job& job) { return {job.cluster.emulate.link_gbps, job.cluster.emulate.link_latency_us}; }

// [cluster.emulate] as_described: every pair of ranks linked as the job's [cluster] says.
LinkMatrix described_links(const Cluster& cluster) {
  const int n = cluster.size();
  LinkMatrix m{n, std::vector<LinkModel>(size_t(n) * size_t(n))};
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      const Link l = cluster.link(a, b);
      m.links[size_t(a) * size_t(n) + size_t(b)] = {l.gbps, l.latency_us};
    }
  return m;
}
}  // namespace

std::unique_ptr<Communicator> paced_by_job_links(const Job& job, Communicator& launched) {
  if (job.cluster.emulate.as_described) {  // wins over link_gbps / link_latency_us
    if (launched.size() != job.launch.ranks)
      throw JobError("[cluster.emulate] as_described",
                     fmt::format("the cluster describes {} rank(s) ([launch] ranks), this launch has {}",
                                 job.launch.ranks, launched.size()),
                     "launch the job's ranks, or set launch.ranks to the launch's");
    return emulate_links(launched, described_links(cluster_from_job(job)));
  }
  const LinkModel link = job_link(job);
  return link.active() ? emulate_links(launched, link) : nullptr;
}

std::string links_text(const Job& job) {
  if (job.cluster.emulate.as_described) {
    const Cluster c = cluster_from_job(job);
    std::string text = "emulated links as [cluster] describes: " + c.describe();
    if (c.has_matrix() && c.size() > 1) {  // the matrix's range, which describe() leaves out
      double lo_gbps = 0, hi_gbps = 0, lo_us = 0, hi_us = 0;
      bool first = true;
      for (int a = 0; a < c.size(); ++a)
        for (int b = 0; b < c.size(); ++b) {
          if (a == b) continue;
          const Link l = c.link(a, b);
          lo_gbps = first ? l.gbps : std::min(lo_gbps, l.gbps);
          hi_gbps = first ? l.gbps : std::max(hi_gbps, l.gbps);
          lo_us = first ? l.latency_us : std::min(lo_us, l.latency_us);
          hi_us = first ? l.latency_us : std::max(hi_us, l.latency_us);
          first = false;
        }
      text += fmt::format(" ({:.3g}-{:.3g} Gbit/s, {:.3g}-{:.3g} us)", lo_gbps, hi_gbps, lo_us, hi_us);
    }
    return text;
  }
  const LinkModel link = job_link(job);
  if (!link.active()) return "";
  return fmt::format("emulated links of {} each way and {:g} us latency",
                     link.gbps > 0 ? fmt::format("{:g} Gbit/s", link.gbps) : std::string("unlimited bandwidth"),
                     link.latency_us);
}

}  // namespace dp
