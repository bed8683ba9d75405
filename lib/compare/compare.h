// Which way to train on this cluster (`dptrain plan JOB --compare`): every strategy that applies to a job
// (data parallelism with equal or I-DAT shares and ring or MRA synchronisation, with the memory levers of
// [train] micro_batch and recompute when a rank would not fit: the fastest setting that fits; CGP with
// its solver's grouping; the pipeline planner's plan), each predicted by the one model `dptrain
// estimate` uses (lib/estimate) on the same inputs, ranked by predicted time to the job's end at the
// accuracy a synchronous run reaches, with the resource that bounds each and why the winner wins. Pure:
// no MPI, no clocks but the solvers' limits.
//
// CGP trades accuracy for speed: its updates land on a global model that other groups changed since
// they read it. The comparison charges it more steps for the same accuracy, a factor 1 + kappa x s, s
// its predicted staleness in local steps (max staleness x exchange_every); kappa in compare.cpp, with
// how it was measured (man dptrain-plan(1), COMPARE).
#pragma once

#include <string>
#include <vector>

#include "lib/cluster/cluster.h"
#include "lib/estimate/estimate.h"
#include "lib/job/job.h"

namespace dp::compare {

// The accuracy cost of CGP's staleness: extra steps per local step of staleness (compare.cpp says how it
// was measured).
extern const double kStalenessStepCost;

// A way to train the job: its name and the job overrides that select it (as `--set` takes them).
struct Candidate {
  std::string name;                // "data, I-DAT shares, MRA"
  std::vector<std::string> sets;   // {"parallel.strategy=data", "parallel.balance.mode=idat", ...}
  Job job;                         // the job with those overrides applied
};

// The job's candidates: data parallelism's four (equal or I-DAT shares, ring or MRA), CGP and the pipeline.
std::vector<Candidate> candidates(const Job& job);

struct Row {
  Candidate candidate;
  bool planned = false;          // false: the strategy's plan could not be made (error says why)
  std::string error;
  estimate::Estimate estimate;   // the prediction (step, samples/s, per-rank memory)
  bool fits = true;              // every rank's buffers within its device's memory
  int peak_rank = 0;             // the rank with the largest buffers, and its bytes and memory
  double peak_bytes = 0, peak_limit_bytes = 0;
  double steps_factor = 1;       // CGP: steps for the same accuracy against a synchronous run
  double time_s = 0;             // predicted time of the job's steps (times steps_factor), evaluations apart
  std::string bound;             // what limits it, in words: "a slow device: rank 3 (speed 0.40) ..."
};

struct Comparison {
  std::string job, model, cluster, timing_basis;
  int64_t steps = 0;              // the job's steps (train.steps, or its epochs' steps)
  std::vector<Row> rows;          // ranked: fitting rows by time, then the rest
  int winner = -1;                // index into rows (-1: nothing fits)
  std::string why;                // the winner against the next, and what bounds each
};

// Every candidate of `job` on `cluster` (estimate's pipeline_cluster(job): speeds under emulated
// slowdown), step times from `timing` (a layer profile or the blocks timed here; required).
Comparison compare_strategies(const Job& job, const estimate::ModelFacts& facts, const Cluster& cluster,
                              const estimate::Timing& timing);

std::string comparison_text(const Comparison& c);
std::string comparison_json(const Comparison& c);

}  // namespace dp::compare
