// CGP (cooperative grouping parallelism): the ranks of a cluster are split into groups; inside a group they
// train synchronously (data parallelism, ring allreduce), and every `exchange_every` local steps a group
// exchanges its accumulated update asynchronously with a global model held by a parameter server on one
// rank. This header is CGP's performance model (the throughput and staleness of a grouping) and CGPP,
// the choice of a grouping: maximise the predicted samples per second subject to a bound on staleness
// (optionally with a fixed number of groups), with the Pareto front of (throughput, staleness) found on
// the way. Solvers: exhaustive (every set partition, up to 12 ranks), sorted (contiguous runs of the
// ranks sorted by speed: the baseline), aga (adaptive genetic algorithm, up to ~64 ranks) and pls (Pareto
// local search, thousands of ranks). Every formula is in man dptrain(1), CGP MODEL.
//
// Pure functions of a Cluster (lib/cluster) and a Workload: no MPI, no clocks except the solvers' time
// limits. Bad input throws JobError (lib/core/error.h) naming the job key it comes from.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/cluster/cluster.h"

namespace dp::cgp {

// The group (0..G-1, every number used) of each rank of the Cluster.
using Grouping = std::vector<int>;

struct Workload {
  double param_bytes = 0;       // bytes of the model's parameters (fp32: 4 x count) = bytes of one update
  int64_t global_batch = 128;   // samples of one synchronous step over all N ranks; a group of k ranks
                                //   takes max(1, round(global_batch * k / N)) per local step
  double sample_seconds = 1;    // compute seconds per training sample on a rank of speed 1
                                //   (rank i: sample_seconds / speed_i)
  bool balanced = true;         // I-DAT inside groups: a group's batch split in proportion to speeds;
                                //   false: equal shares (the slowest member decides)
  int64_t exchange_every = 1;   // local steps of a group between two exchanges with the global model
  int server_rank = 0;          // the rank holding the global model
  double compute_cv = 0;        // jitter: a rank's step compute time varies with this coefficient of
                                //   variation; a synchronous step waits for the slowest of its members
  double hold_staleness = 0;    // the runtime's bound: a group's update waits rather than land when
                                //   another group would see more than this many updates (0: never waits)
};

struct GroupPrediction {
  std::vector<int> members;   // ranks, ascending
  int64_t batch = 0;          // samples of one local step of the group
  double speed_sum = 0;
  double compute_s = 0;       // one local step's forward+backward
  double allreduce_s = 0;     // ring allreduce of the update over the group's slowest link (0: one rank)
  double step_s = 0;          // compute_s + allreduce_s
  double exchange_s = 0;      // push the update, pull the global model (with the server's contention)
  double gather_s = 0;        // the members all-gather their slices of the global model
  double held_s = 0;          // waiting for the staleness bound (hold_staleness), per cycle
  double cycle_s = 0;         // exchange_every * step_s + exchange_s + gather_s + held_s
  double samples_per_s = 0;   // exchange_every * batch / cycle_s
  double staleness = 0;       // other groups' updates landing between this group's read and its write
};

struct Prediction {
  std::vector<GroupPrediction> groups;  // in the order of normalized(grouping)
  double samples_per_s = 0;             // sum over the groups
  double max_staleness = 0;
  double server_load = 0;               // offered load on the server without contention (> 1: saturated)
};

// The workload of `job` for a model of `parameters` fp32 parameters: its global batch, I-DAT or equal
// shares, exchange_every, the hold at max_staleness; `sample_seconds` as given (the callers know where
// the compute time comes from: measured speeds, [cluster] sample_rate, a timed step).
Workload job_workload(const Job& job, int64_t parameters, double sample_seconds);

// A group's exchange with the server: every member other than the server sends its shard of the
// update; the server's interface takes them in one after another, and sends each member its shard of
// the global model back as soon as that member's shard is applied (its outgoing direction works while
// the incoming one still takes the others in), so the exchange holds the server for the sum of the
// pushes, the last member's pull, and a latency each way. The server's own shard costs nothing.
struct ServerTraffic {
  double push = 0, pull = 0, latency = 0;  // seconds
};
ServerTraffic server_traffic(const Cluster& c, const std::vector<int>& members, int server, double shard_bytes);

namespace detail {
// The groups' rates of updates (per second) under the runtime's hold at `bound` staleness, for cycles of
// `cycle` seconds each (lib/cgp/model.cpp): 1 / cycle where no group would see more than `bound` updates
// of the others in its cycle, else the fast groups slowed alike until none does. Also the hybrid's model.
std::vector<double> held_rates(const std::vector<double>& cycle, double bound);
// The mean wait of each group's exchange for the server's interface (lib/cgp/queue.cpp): group g computes
// for busy[g] seconds, then its exchange holds the interface for exchange[g] (one exchange at a time, first
// come first served; a group without exchange never waits), the cycles played out without noise until
// they settle. CGP's prediction and the hybrid's; the hold comes after (held_rates on the longer cycles).
std::vector<double> queued_waits(const std::vector<double>& busy, const std::vector<double>& exchange);
}  // namespace detail

// The model's prediction for grouping `g` (one entry per rank of `cluster`). Throws JobError for a
// grouping whose size disagrees with the cluster or has a negative group, for speeds that are not
// positive and finite, and for a workload out of range.
Prediction predict(const Cluster& cluster, const Workload& w, const Grouping& g);

struct SolveOptions {
  CgpSolver solver = CgpSolver::aga;
  double max_staleness = 4;    // the bound (>= 0)
  int group_count = 0;         // exactly this many groups; 0: free
  uint64_t seed = 1;           // aga, pls: the same seed gives the same answer (unless the time limit stops them)
  double time_limit_s = 1.0;   // aga, pls: wall-clock limit of the search
};
// The solve `job` asks for: [parallel.cgp] solver, max_staleness, group_count and solver_seconds, [job]
// seed. Callers change what they solve differently (plan's sorted baseline, a quick check's time limit).
SolveOptions solve_options(const Job& job);

struct FrontPoint {
  Grouping grouping;
  double samples_per_s = 0;
  double max_staleness = 0;
};

struct Solution {
  Grouping grouping;               // normalized
  Prediction prediction;
  std::vector<FrontPoint> front;   // non-dominated groupings the solver saw, staleness ascending
  CgpSolver solver = CgpSolver::aga;  // the one that found it
  double seconds = 0;              // wall time of the solve
  int64_t evaluations = 0;         // groupings scored
  bool time_limited = false;       // the search stopped at time_limit_s rather than converging
};

// CGPP: the grouping of the highest predicted samples_per_s with max_staleness <= o.max_staleness (and
// the runtime's hold modelled at that bound: w.hold_staleness is replaced by o.max_staleness) (and
// exactly o.group_count groups when > 0), by solver o.solver. Throws JobError for a
// group count above the ranks, exhaustive on more than 12 ranks, a bound no grouping meets (the message
// gives the smallest staleness found), and the errors of predict.
Solution solve(const Cluster& cluster, const Workload& w, const SolveOptions& o);

// Groups renumbered in order of first appearance: {2, 2, 0, 1} -> {0, 0, 1, 2}.
Grouping normalized(const Grouping& g);
// Strategy "cgp-pipeline"'s groups: [parallel.cgp] groups, else one group per node of the job's
// [cluster]; normalized. Throws JobError for groups of unequal size (each runs the same stages).
Grouping pipeline_groups(const Job& job);
// The members of each group, groups in order of first appearance: "{0,1,2} {3,4} {5}".
std::string grouping_text(const Grouping& g);

}  // namespace dp::cgp
