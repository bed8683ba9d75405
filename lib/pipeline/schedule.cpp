// 1F1B schedules and their simulation (schedule.h).
#include "lib/pipeline/schedule.h"

#include <algorithm>

#include "lib/core/error.h"
#include "lib/pipeline/plan.h"

namespace dp::pipeline {

int in_flight(int stage, int stages, int micro_batches) { return std::min(micro_batches, stages - stage); }

std::vector<Op> schedule_1f1b(int stage, int stages, int micro_batches) {
  DP_CHECK(stages >= 1 && stage >= 0 && stage < stages && micro_batches >= 1, "a stage of a pipeline");
  const int slots = in_flight(stage, stages, micro_batches);
  const int warmup = std::min(micro_batches, stages - stage - 1);
  std::vector<Op> ops;
  int next_f = 0, next_b = 0;
  for (; next_f < warmup; ++next_f) ops.push_back({OpKind::forward, next_f, next_f % slots});
  while (next_f < micro_batches) {  // steady state: one forward, one backward
    ops.push_back({OpKind::forward, next_f, next_f % slots});
    ++next_f;
    ops.push_back({OpKind::backward, next_b, next_b % slots});
    ++next_b;
  }
  for (; next_b < micro_batches; ++next_b) ops.push_back({OpKind::backward, next_b, next_b % slots});  // drain
  return ops;
}

Simulation simulate(const std::vector<double>& forward, const std::vector<double>& backward,
                    const std::vector<double>& link_forward, const std::vector<double>& link_backward,
                    int micro_batches) {
  const int S = int(forward.size()), M = micro_batches;
  DP_CHECK(int(backward.size()) == S && int(link_forward.size()) == S - 1 && int(link_backward.size()) == S - 1,
           "times for every stage and link");
  // done_f[s][m], done_b[s][m]: when stage s finished that op; arrive_*: when its input got there.
  std::vector<std::vector<double>> done_f(size_t(S), std::vector<double>(size_t(M), -1)), done_b = done_f;
  std::vector<double> link_f_free(size_t(std::max(0, S - 1)), 0), link_b_free = link_f_free;
  std::vector<std::vector<double>> arrive_f = done_f, arrive_b = done_f;  // input ready at stage s
  std::vector<std::vector<Op>> ops(static_cast<size_t>(S));
  std::vector<size_t> next(static_cast<size_t>(S), 0);
  std::vector<double> clock(static_cast<size_t>(S), 0);
  for (int s = 0; s < S; ++s) ops[size_t(s)] = schedule_1f1b(s, S, M);
  for (int m = 0; m < M; ++m) arrive_f[0][size_t(m)] = 0;  // the data is there
  Simulation out;
  out.busy_s.assign(size_t(S), 0);
  for (bool progressed = true; progressed;) {
    progressed = false;
    for (int s = 0; s < S; ++s) {
      while (next[size_t(s)] < ops[size_t(s)].size()) {
        const Op& op = ops[size_t(s)][next[size_t(s)]];
        const size_t m = size_t(op.micro_batch);
        double ready;
        if (op.kind == OpKind::forward) ready = arrive_f[size_t(s)][m];
        else ready = s + 1 == S ? done_f[size_t(s)][m] : arrive_b[size_t(s)][m];
        if (ready < 0) break;  // waiting for another stage
        const double start = std::max(clock[size_t(s)], ready);
        const double took = op.kind == OpKind::forward ? forward[size_t(s)] : backward[size_t(s)];
        clock[size_t(s)] = start + took;
        out.busy_s[size_t(s)] += took;
        if (op.kind == OpKind::forward) {
          done_f[size_t(s)][m] = clock[size_t(s)];
          if (s + 1 < S) {  // the activations travel on, one transfer at a time
            const double t = std::max(link_f_free[size_t(s)], clock[size_t(s)]) + link_forward[size_t(s)];
            link_f_free[size_t(s)] = t;
            arrive_f[size_t(s) + 1][m] = t;
          }
        } else {
          done_b[size_t(s)][m] = clock[size_t(s)];
          if (s > 0) {
            const double t = std::max(link_b_free[size_t(s) - 1], clock[size_t(s)]) + link_backward[size_t(s) - 1];
            link_b_free[size_t(s) - 1] = t;
            arrive_b[size_t(s) - 1][m] = t;
          }
        }
        ++next[size_t(s)];
        progressed = true;
      }
    }
  }
  for (int s = 0; s < S; ++s) DP_CHECK(next[size_t(s)] == ops[size_t(s)].size(), "the schedules deadlocked");
  out.minibatch_s = *std::max_element(clock.begin(), clock.end());
  out.finish_s = clock;
  return out;
}

double played_minibatch_s(const std::vector<double>& forward, const std::vector<double>& backward,
                          const std::vector<double>& link_forward, const std::vector<double>& link_backward,
                          const std::vector<double>& tail, int micro_batches) {
  DP_CHECK(tail.size() == forward.size(), "a tail for every stage");
  const Simulation sim = simulate(forward, backward, link_forward, link_backward, micro_batches);
  double end = sim.minibatch_s;
  for (size_t s = 0; s < tail.size(); ++s) end = std::max(end, sim.finish_s[s] + tail[s]);
  return end;
}

double scheduled_minibatch_s(const Prediction& p, int64_t micro_batches) {
  const size_t S = p.stages.size();
  DP_CHECK(S > 0 && micro_batches > 0, "a prediction of a pipeline");
  std::vector<double> forward(S), backward(S), tail(S), link_forward(S - 1), link_backward(S - 1);
  for (size_t s = 0; s < S; ++s) {
    const StagePrediction& st = p.stages[s];
    forward[s] = st.forward_s, backward[s] = st.backward_s, tail[s] = st.allreduce_s + st.update_s;
    if (s + 1 < S) link_forward[s] = st.link_forward_s, link_backward[s] = st.link_backward_s;
  }
  return played_minibatch_s(forward, backward, link_forward, link_backward, tail, int(micro_batches));
}

}  // namespace dp::pipeline
