// parse_stages(): a user's partition, "0-16x3,17-39" or "0-16@0+1+2,17-39@3-5", checked against the
// blocks and the cluster; every error names the stage and says what would be valid. best_given_stages():
// the same partition at its best micro-batch count.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <string_view>

#include "lib/core/error.h"
#include "lib/pipeline/plan.h"

namespace dp::pipeline {
namespace {

class StagesParser {
 public:
  StagesParser(std::string_view text, std::string where) : text_(text), where_(std::move(where)) {}

  [[noreturn]] void fail(const std::string& what, const std::string& hint) const {
    throw UsageError(where_, what, hint);
  }

  bool done() const { return pos_ >= text_.size(); }
  bool take(char ch) {
    if (pos_ < text_.size() && text_[pos_] == ch) return ++pos_, true;
    return false;
  }
  int64_t number(const char* what) {
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(text_.data() + pos_, text_.data() + text_.size(), v);
    if (ec != std::errc() || v < 0)
      fail(fmt::format("expected {} at character {} of \"{}\"", what, pos_ + 1, text_),
           "stages look like \"0-16x3,17-39\" or \"0-16@0+1+2,17-39@3\"");
    pos_ = size_t(end - text_.data());
    return v;
  }

 private:
  std::string_view text_;
  std::string where_;
  size_t pos_ = 0;
};

}  // namespace

Plan parse_stages(const std::string& text, const Workload& w, const Cluster& c, int64_t micro_batches,
                  const std::string& where) {
  StagesParser in(text, where);
  const int64_t n = int64_t(w.blocks.size());
  const int64_t micro_batch = w.global_batch / micro_batches;
  const std::string valid = fmt::format("the model has blocks 0-{}; stages cover them in order, each once", n - 1);
  Plan plan;
  plan.micro_batches = micro_batches;
  std::vector<bool> taken(size_t(c.size()), false);
  int next_rank = 0;
  int64_t expect = 0;
  auto use = [&](int64_t r, size_t stage) {
    if (r >= c.size())
      in.fail(fmt::format("stage {} names rank {}, the cluster has ranks 0-{}", stage, r, c.size() - 1),
              "name ranks of the cluster");
    if (taken[size_t(r)]) in.fail(fmt::format("rank {} is in two stages", r), "give every stage its own ranks");
    taken[size_t(r)] = true;
    plan.stages.back().ranks.push_back(int(r));
  };
  while (!in.done()) {
    const size_t s = plan.stages.size();
    const int64_t first = in.number("a block number");
    const int64_t last = in.take('-') ? in.number("a block number") : first;
    if (last < first) in.fail(fmt::format("stage {} runs backwards ({}-{})", s, first, last), valid);
    if (first > expect) in.fail(fmt::format("blocks {}-{} are in no stage", expect, first - 1), valid);
    if (first < expect) in.fail(fmt::format("stage {} ({}-{}) overlaps the stage before it", s, first, last), valid);
    if (last >= n) in.fail(fmt::format("stage {} ({}-{}) runs past the last block, {}", s, first, last, n - 1), valid);
    plan.stages.push_back({int(first), int(last), {}, {}});
    expect = last + 1;
    if (in.take('@')) {
      do {
        const int64_t a = in.number("a rank");
        const int64_t b = in.take('-') ? in.number("a rank") : a;
        for (int64_t r = a; r <= b; ++r) use(r, s);
      } while (in.take('+'));
      std::sort(plan.stages.back().ranks.begin(), plan.stages.back().ranks.end());
    } else {
      const int64_t replicas = in.take('x') ? in.number("a replica count") : 1;
      if (replicas < 1) in.fail(fmt::format("stage {} has 0 replicas", s), "replicas are at least 1: \"0-16x2\"");
      for (int64_t k = 0; k < replicas; ++k) {
        while (next_rank < c.size() && taken[size_t(next_rank)]) ++next_rank;
        if (next_rank >= c.size())
          in.fail(fmt::format("the stages take more devices than the cluster's {}", c.size()),
                  "use fewer stages or replicas, or describe more ranks in [cluster]");
        use(next_rank, s);
      }
    }
    if (int64_t(plan.stages.back().ranks.size()) > micro_batch)
      in.fail(fmt::format("stage {} has {} devices but a micro-batch only {} samples", s,
                          plan.stages.back().ranks.size(), micro_batch),
              "use fewer replicas or fewer, larger micro-batches");
    if (!in.done() && !in.take(','))
      in.fail(fmt::format("expected ',' after stage {} in \"{}\"", s, text), "separate stages with ','");
  }
  if (plan.stages.empty()) in.fail("no stages given", "stages look like \"0-16x3,17-39\"");
  if (expect < n) in.fail(fmt::format("blocks {}-{} are in no stage", expect, n - 1), valid);
  return plan;
}

PlanResult best_given_stages(const std::string& text, const Workload& w, const Cluster& c, const std::string& where,
                             const std::function<PlanResult(Plan)>& finish) {
  std::optional<PlanResult> best;
  std::optional<UsageError> refused;
  for (int64_t M : w.micro_batch_counts) {
    Plan plan;
    try {
      plan = parse_stages(text, w, c, M, where);
    } catch (const UsageError& e) {
      if (!refused) refused = e;
      continue;
    }
    PlanResult r = finish(std::move(plan));
    if (!best || (r.feasible && !best->feasible) ||
        (r.feasible == best->feasible && r.prediction.minibatch_s < best->prediction.minibatch_s))
      best = std::move(r);
  }
  DP_CHECK(best || refused, "a candidate micro-batch count");
  if (!best) throw *refused;
  return *best;
}

}  // namespace dp::pipeline
