// The 1F1B schedule with a flush per mini-batch, as a pure list of operations per stage (what the
// runtime executes, tested here without any communication): stage s of S runs min(M, S - s - 1)
// warm-up forwards, then alternates one forward and one backward while forwards remain, then the
// remaining backwards. A stage holds at most min(M, S - s) micro-batches at once, and retires them in
// order, so micro-batch m can live in slot m % that. simulate() plays the schedules against each other
// with given times: what the plan's cost model (plan.h) approximates in closed form.
#pragma once

#include <cstdint>
#include <vector>

namespace dp::pipeline {

enum class OpKind { forward, backward };

struct Op {
  OpKind kind;
  int micro_batch;
  int slot;  // of the stage's activations (models/stage.h)
};

// Micro-batches a stage holds at once under 1F1B.
int in_flight(int stage, int stages, int micro_batches);
std::vector<Op> schedule_1f1b(int stage, int stages, int micro_batches);

// Times per micro-batch: forward[s], backward[s] of each stage; link_forward[s], link_backward[s] of the
// link after stage s (S - 1 entries). Communication overlaps computation (a link is its own resource, one
// transfer at a time per direction). Returns the time the last backward of stage 0 ends.
struct Simulation {
  double minibatch_s = 0;
  std::vector<double> busy_s;    // per stage: forward and backward time
  std::vector<double> finish_s;  // per stage: when its last operation ends (its allreduce and update follow)
};
Simulation simulate(const std::vector<double>& forward, const std::vector<double>& backward,
                    const std::vector<double>& link_forward, const std::vector<double>& link_backward,
                    int micro_batches);

// A mini-batch played: simulate()'s schedule, then each stage's `tail` (its gradients' allreduce and its
// update, per stage) from its last backward; the last of them ends the mini-batch.
double played_minibatch_s(const std::vector<double>& forward, const std::vector<double>& backward,
                          const std::vector<double>& link_forward, const std::vector<double>& link_backward,
                          const std::vector<double>& tail, int micro_batches);

struct Prediction;  // plan.h
// A prediction's stage times (plan.h's model) played so: what its closed form (Prediction::minibatch_s:
// the stages and links in sum, then M - 1 times the slowest of them) approximates. The closed form
// leaves out the in-flight limit: a stage holds at most S - s micro-batches, so where the links take a
// fair part of a micro-batch's round trip the stages wait for its return; and it charges a link's two
// directions as one resource where they run at once. What dptrain estimate predicts for a pipeline.
double scheduled_minibatch_s(const Prediction& p, int64_t micro_batches);

}  // namespace dp::pipeline
