// The pieces lib/cgp's files share and the public header does not show: the cluster as the model reads
// it (Topology), the per-group terms and how groups combine into a throughput and a staleness, the
// incremental grouping state every solver scores groupings with, the Pareto archive, and the search
// record (front, best feasible grouping, time limit) the solvers fill. Not for use outside lib/cgp and its
// tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <vector>

#include "lib/cgp/cgp.h"
#include "lib/core/rng.h"

namespace dp::cgp::detail {

// Staleness within this of the bound meets it (two equal groups have staleness 1 up to rounding).
constexpr double kStalenessTolerance = 1e-9;

// The cluster as the model reads it: validated speeds, dense node and rack numbers, the links.
struct Topology {
  const Cluster* cluster = nullptr;
  int n = 0;
  std::vector<double> speed;
  std::vector<int> node, rack;  // dense: 0..nodes-1, 0..racks-1
  int nodes = 0, racks = 0;
  bool matrix = false;          // links from the cluster's matrix; else by level
  Link level[3];                // same node, same rack, across racks
  int server = 0;
};
// Throws JobError for speeds that are not positive and finite, a bad workload or links.
Topology make_topology(const Cluster& c, const Workload& w);

// One group's times without the server's contention.
struct GroupTerms {
  int64_t batch = 0;
  double compute = 0, allreduce = 0, step = 0;
  double exchange = 0;  // uncontended push + pull: the time the exchange holds the server's interface
  double gather = 0;    // the all-gather of the global model's slices inside the group, after it
};
// What the whole grouping adds up to, and each group's share of it.
struct Score {
  double samples_per_s = 0, max_staleness = 0, server_load = 0;
};
struct GroupTimes {
  double exchange = 0, held = 0, cycle = 0, samples_per_s = 0, staleness = 0;
};
// Contention, holds, cycles, throughput and staleness of the groups with `terms` under workload `w`
// (one group: no exchange); the hold slows the fast groups by rates (held_rates). The solvers' score, in
// closed form: below saturation no exchange waits at the server, above it every exchange is stretched
// alike until the server is exactly busy. With `queued`, the prediction's: the server's queue played out
// (queued_waits), at any load.
Score combine(const std::vector<GroupTerms>& terms, const Workload& w, std::vector<GroupTimes>* times = nullptr,
              bool queued = false);
// The expected maximum of k independent standard normal variables (0 for k = 1): how much longer than
// its average member a synchronous step of k jittery members takes, in standard deviations.
double expected_max_of_normals(int k);

// A grouping under construction or change, with per-group aggregates (size, speed sum, slowest member,
// which nodes and racks the members span and where they sit relative to the server) so that adding,
// removing or moving a rank costs O(1) on a level cluster (O(k) on a matrix one) and scoring O(groups).
// Group slots may be empty; groupings read out are normalized.
class GroupingState {
 public:
  GroupingState(const Topology& t, const Workload& w);
  const Topology& topology() const { return t_; }
  void clear();                    // every rank unassigned
  void assign(const Grouping& g);  // labels >= 0, one per rank
  int label(int rank) const { return label_[size_t(rank)]; }  // -1: unassigned
  int slots() const { return int(groups_.size()); }
  int groups() const { return nonempty_; }
  int size(int group) const { return int(groups_[size_t(group)].members.size()); }
  const std::vector<int>& members(int group) const { return groups_[size_t(group)].members; }
  int free_slot();                 // an empty group slot (appended when there is none)
  void add(int rank, int group);   // rank unassigned
  void remove(int rank);           // rank assigned
  void move(int rank, int group) { remove(rank); add(rank, group); }
  const GroupTerms& terms(int group);
  Score score(std::vector<GroupTimes>* times = nullptr, std::vector<int>* slot_of = nullptr, bool queued = false);
  Grouping grouping() const;       // normalized

 private:
  struct Group {
    std::vector<int> members;
    double speed_sum = 0, min_speed = std::numeric_limits<double>::infinity();
    bool min_valid = true;
    // level clusters: members per node and per rack, used nodes per rack, and what they imply
    std::vector<int> per_node, per_rack, nodes_in_rack;
    int nodes_with_pair = 0, racks_used = 0, racks_with_two_nodes = 0;
    int on_server_node = 0, in_server_rack = 0, off_server_rack = 0;  // members other than the server
    // matrix clusters: the slowest bandwidth and largest latency between members
    double bw_min = std::numeric_limits<double>::infinity(), lat_max = 0;
    bool links_valid = true;
    GroupTerms cached;
    bool dirty = true;
  };
  void count_levels(Group& g, int rank, int delta);
  void compute_terms(Group& g);

  const Topology& t_;
  Workload w_;
  std::vector<int> label_, pos_;
  std::vector<Group> groups_;
  std::vector<GroupTerms> scratch_;
  int nonempty_ = 0;
};

// A change of a grouping as moves of ranks, undone in reverse order (empty group slots stay, so the
// labels come back exactly).
class Moves {
 public:
  void move(GroupingState& state, int rank, int group);  // group < 0: a free slot
  void undo(GroupingState& state);
  bool empty() const { return log_.empty(); }

 private:
  std::vector<std::pair<int, int>> log_;  // rank, its group before
};

// The neighbourhoods of the searches, applied to `state` through `moves`:
bool move_rank(GroupingState& state, Moves& moves, int rank, int group);   // to another group (< 0: a new one)
bool swap_ranks(GroupingState& state, Moves& moves, int a, int b);         // of different groups
bool merge_groups(GroupingState& state, Moves& moves, int into, int from);
enum class SplitBy { half, node, speed };
// Part of a group to a new one: a random half, the members of about half its nodes, or its slower half.
bool split_group(GroupingState& state, Moves& moves, int group, SplitBy how, Rng& rng);
// The members of `group` on `rank`'s node, to `to`.
bool move_node_members(GroupingState& state, Moves& moves, int rank, int to);
// One random change of the state's grouping among those above, keeping the number of groups when
// `keep_count`, never above `max_groups`. False when none applied.
bool random_neighbour(GroupingState& state, Moves& moves, Rng& rng, bool keep_count, int max_groups);

// The non-dominated (samples_per_s up, max_staleness down) groupings seen, staleness ascending (so
// throughput ascending too).
struct ArchiveEntry {
  Grouping grouping;
  Score score;
  int groups = 0;
  bool explored = false;
};
class ParetoArchive {
 public:
  bool dominated(double samples_per_s, double staleness) const;  // or equal to a point within rounding
  // Inserts unless dominated, dropping the points it dominates; true when inserted.
  bool insert(Grouping g, const Score& s, int groups);
  std::vector<ArchiveEntry>& entries() { return entries_; }
  const std::vector<ArchiveEntry>& entries() const { return entries_; }
  std::vector<FrontPoint> front() const;

 private:
  std::vector<ArchiveEntry> entries_;
};

// What a solver run accumulates: every scored grouping passes through record().
class Search {
 public:
  Search(const Topology& t, const Workload& w, const SolveOptions& o);
  const Topology& topology() const { return t_; }
  const Workload& workload() const { return w_; }
  const SolveOptions& options() const { return o_; }
  // The largest group count that can meet the bound (G groups have staleness >= G - 1), or group_count.
  int max_groups() const { return max_groups_; }
  bool feasible(const Score& s) const { return s.max_staleness <= o_.max_staleness + kStalenessTolerance; }
  // Counts the evaluation; adds the grouping to the front and keeps it when it is the best feasible one.
  // Groupings of another group count than a fixed one are ignored. True when it entered the front.
  bool record(const Score& s, GroupingState& state);
  bool expired();  // past the time limit (remembered)
  double seconds() const;
  Rng& rng() { return rng_; }
  ParetoArchive& archive() { return archive_; }
  bool have_best() const { return have_best_; }
  const Grouping& best() const { return best_; }
  double smallest_staleness() const { return smallest_staleness_; }  // with the required group count
  int64_t evaluations() const { return evaluations_; }
  bool time_limited() const { return time_limited_; }

 private:
  const Topology& t_;
  const Workload& w_;
  const SolveOptions& o_;
  int max_groups_ = 1;
  ParetoArchive archive_;
  Grouping best_;
  Score best_score_;
  bool have_best_ = false;
  double smallest_staleness_ = std::numeric_limits<double>::infinity();
  int64_t evaluations_ = 0;
  bool time_limited_ = false;
  std::chrono::steady_clock::time_point start_, deadline_;
  Rng rng_;
};

// Throughput with a penalty for staleness above the bound: the genetic algorithm's fitness.
double penalized(const Score& s, double bound);

// Starting points shared by aga and pls: sorted's answer for every group count, one group, groups of
// whole nodes and of whole racks (contiguous runs of them, 2..max_groups groups); with a fixed group
// count only groupings of that count.
std::vector<Grouping> start_groupings(Search& s);
// Contiguous cuts of `order` (ranks) into groups at `cuts` (increasing ends, the last = order.size()).
Grouping grouping_from_cuts(int n, const std::vector<int>& order, const std::vector<int>& cuts);
// Merges or splits random groups of `g` (normalized on return) until it has exactly `count` groups.
void fit_group_count(Grouping& g, int count, Rng& rng);

// The solvers; each records every grouping it scores into `s`.
void solve_exhaustive(Search& s);
// Returns sorted's best grouping for each group count it tried (index G - 1; empty where none).
std::vector<Grouping> solve_sorted(Search& s);
void solve_aga(Search& s);
void solve_pls(Search& s);

}  // namespace dp::cgp::detail
