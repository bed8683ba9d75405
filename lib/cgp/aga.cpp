// CGP_AGA: an adaptive genetic algorithm (Srinivas & Patnaik, "Adaptive probabilities of crossover and
// mutation in genetic algorithms", IEEE SMC 1994) over groupings. A chromosome is the normalized group
// label of every rank; fitness is the predicted throughput, divided down for staleness above the bound.
// Crossover and mutation probabilities adapt to each pair's fitness:
//   pc = k1 (fmax - f') / (fmax - favg) when f' >= favg, else k3   (f': the fitter parent)
//   pm = k2 (fmax - f)  / (fmax - favg) when f  >= favg, else k4   (f: the child)
// so good solutions are kept and poor ones disrupted. Crossover passes whole groups: a random subset of
// one parent's groups, the other parent's grouping of the rest. Mutations are the neighbourhoods of
// neighbours.cpp (move, swap, move a node's members, merge, split). The population starts from sorted's
// answers, one group, node- and rack-aligned groups and random groupings; the best two survive each
// generation. Stops after kPatience generations without a better best, or at the time limit.
#include <algorithm>

#include "lib/cgp/cgp_internal.h"

namespace dp::cgp::detail {

namespace {

constexpr double k1 = 1.0, k2 = 0.5, k3 = 1.0, k4 = 0.5;  // the paper's values
constexpr int kPatience = 1000;
constexpr int kElites = 2;

struct Individual {
  Grouping grouping;
  double fitness = 0;
};

int group_count(const Grouping& g) { return g.empty() ? 0 : *std::max_element(g.begin(), g.end()) + 1; }

class Aga {
 public:
  explicit Aga(Search& s) : s_(s), state_(s.topology(), s.workload()), rng_(s.rng()) {}

  void run() {
    const int n = s_.topology().n;
    const int size = std::clamp(4 * n, 24, 64);
    for (Grouping& g : start_groupings(s_))
      if (int(population_.size()) < size / 2) population_.push_back(evaluate(std::move(g)));
    while (int(population_.size()) < size) population_.push_back(evaluate(random_grouping()));
    double best = -1;
    for (int stall = 0; stall < kPatience && !s_.expired();) {
      generation();
      const double top = population_.front().fitness;
      if (top > best * (1 + 1e-12)) best = top, stall = 0;
      else ++stall;
    }
  }

 private:
  // Repairs the group count, scores, and records.
  Individual evaluate(Grouping g) {
    const int fixed = s_.options().group_count;
    if (fixed > 0 && group_count(g) != fixed) fit_group_count(g, fixed, rng_);
    if (fixed == 0 && group_count(g) > s_.max_groups()) fit_group_count(g, s_.max_groups(), rng_);
    state_.assign(g);
    const Score score = state_.score();
    s_.record(score, state_);
    return Individual{state_.grouping(), penalized(score, s_.options().max_staleness)};
  }

  Grouping random_grouping() {
    const int n = s_.topology().n;
    const int fixed = s_.options().group_count;
    const int groups = fixed > 0 ? fixed : 1 + int(rng_.below(uint64_t(s_.max_groups())));
    Grouping g(static_cast<size_t>(n));
    for (int& label : g) label = int(rng_.below(uint64_t(groups)));
    fit_group_count(g, groups, rng_);
    return g;
  }

  const Individual& tournament() {
    const Individual& a = population_[size_t(rng_.below(population_.size()))];
    const Individual& b = population_[size_t(rng_.below(population_.size()))];
    return a.fitness >= b.fitness ? a : b;
  }

  // A random subset of a's groups kept whole; the other ranks grouped as in b.
  Grouping crossover(const Grouping& a, const Grouping& b) {
    const int groups_a = group_count(a);
    std::vector<bool> keep(static_cast<size_t>(groups_a));
    for (size_t g = 0; g < keep.size(); ++g) keep[g] = rng_.below(2) == 1;
    Grouping child(a.size());
    for (size_t r = 0; r < a.size(); ++r) child[r] = keep[size_t(a[r])] ? a[r] : groups_a + b[r];
    return normalized(child);
  }

  void generation() {
    std::stable_sort(population_.begin(), population_.end(),
                     [](const Individual& x, const Individual& y) { return x.fitness > y.fitness; });
    double fmax = population_.front().fitness, favg = 0;
    for (const Individual& i : population_) favg += i.fitness;
    favg /= double(population_.size());
    const double spread = fmax - favg;
    const bool adaptive = spread > 1e-12 * std::max(1.0, fmax);
    auto probability = [&](double f, double k_high, double k_low) {
      return adaptive && f >= favg ? k_high * (fmax - f) / spread : k_low;
    };
    std::vector<Individual> next(population_.begin(), population_.begin() + kElites);
    const bool keep_count = s_.options().group_count > 0;
    while (next.size() < population_.size() && !s_.expired()) {
      const Individual& a = tournament();
      const Individual& b = tournament();
      const Individual& fitter = a.fitness >= b.fitness ? a : b;
      Individual child = rng_.uniform() < probability(fitter.fitness, k1, k3)
                             ? evaluate(crossover(a.grouping, b.grouping))
                             : fitter;
      // A copy of a member already chosen is mutated whatever pm says: copies only crowd the population.
      const bool copy = std::any_of(next.begin(), next.end(), [&](const Individual& i) { return i.grouping == child.grouping; });
      if (copy || rng_.uniform() < probability(child.fitness, k2, k4)) {
        state_.assign(child.grouping);
        Moves moves;
        const int changes = 1 + int(rng_.below(2));
        for (int c = 0; c < changes; ++c) random_neighbour(state_, moves, rng_, keep_count, s_.max_groups());
        if (!moves.empty()) child = evaluate(state_.grouping());
      }
      next.push_back(std::move(child));
    }
    population_ = std::move(next);
    std::stable_sort(population_.begin(), population_.end(),
                     [](const Individual& x, const Individual& y) { return x.fitness > y.fitness; });
  }

  Search& s_;
  GroupingState state_;
  Rng& rng_;
  std::vector<Individual> population_;
};

}  // namespace

void solve_aga(Search& s) { Aga(s).run(); }

}  // namespace dp::cgp::detail
