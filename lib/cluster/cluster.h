// The machines a job runs on, as the planners, the estimator and the emulator see them: every rank (a
// worker: one device) with its relative speed and memory, ranks grouped into nodes and nodes into racks,
// and the link between every pair of ranks (bandwidth each way and one-way latency), by level (same node,
// same rack, across racks) or as a full matrix. Built from a job's [cluster] (man dptrain-job(5)), or drawn
// at any size from its device kinds for planning at scales this machine cannot run. Pure data: no MPI.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/job/job.h"

namespace dp {

struct Link {
  double gbps = 0;        // bandwidth of each direction, Gbit/s (> 0)
  double latency_us = 0;  // one-way latency of a message
  // Seconds for one message of `bytes` to cross the link.
  double seconds(double bytes) const { return bytes * 8 / (gbps * 1e9) + latency_us * 1e-6; }
  double bandwidth_seconds(double bytes) const { return bytes * 8 / (gbps * 1e9); }  // without the latency
};

struct ClusterRank {
  double speed = 1;        // relative compute speed (samples per second relative to the reference device)
  double memory_gb = 0;    // device memory; 0: unknown
  std::string kind;        // device kind ("" when not described by kinds)
  int node = 0, rack = 0;  // 0-based
};

enum class LinkLevel { node, rack, cross };

class Cluster {
 public:
  // By levels: a pair of ranks on one node, in one rack, or in different racks.
  Cluster(std::vector<ClusterRank> ranks, Link same_node, Link same_rack, Link across_racks);
  // By a full matrix, row-major ranks x ranks (the diagonal is ignored).
  Cluster(std::vector<ClusterRank> ranks, std::vector<Link> matrix);

  int size() const { return int(ranks_.size()); }
  const ClusterRank& rank(int r) const { return ranks_[size_t(r)]; }
  const std::vector<ClusterRank>& ranks() const { return ranks_; }
  std::vector<double> speeds() const;
  int nodes() const;  // distinct nodes, racks
  int racks() const;
  bool has_matrix() const { return !matrix_.empty(); }
  LinkLevel level(int a, int b) const;
  // The link from rank a to rank b (a != b).
  Link link(int a, int b) const;
  // The same cluster with other speeds (measured ones), one per rank.
  Cluster with_speeds(const std::vector<double>& speeds) const;
  Cluster with_memory(const std::vector<double>& memory_gb) const;  // the same, each rank's memory
  // Only the ranks `ranks` (renumbered 0.. in that order), with their links between them.
  Cluster subset(const std::vector<int>& ranks) const;
  // One line: "6 ranks on 2 nodes in 1 rack; links 10 Gbit/s in a node, 1 Gbit/s between racks ..."
  std::string describe() const;

 private:
  std::vector<ClusterRank> ranks_;
  Link levels_[3];
  std::vector<Link> matrix_;
};

// The job's [cluster] for its launch.ranks ranks (speeds per rank, or from kinds; all 1 when neither).
// The job has been validated, so sizes agree.
Cluster cluster_from_job(const Job& job);

// `workers` ranks drawn from the job's device kinds (kinds, kind_counts as proportions, kind_speeds,
// kind_memory_gb; without kinds, the per-rank speeds repeated), a seeded shuffle of the mix, placed
// ranks_per_node to a node (8 when the job says 0) and nodes_per_rack to a rack (4 when 0), with the
// job's link levels. For `dptrain plan --workers N`.
Cluster draw_cluster(const Job& job, int workers, uint64_t seed);

}  // namespace dp
