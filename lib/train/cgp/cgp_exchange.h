// CGP's exchange between groups: the parameter server on rank 0 that holds the global model, and the
// messages every rank of a group sends it. The server runs on a thread of rank 0 over a communicator of
// its own; every rank (rank 0's training thread too) talks to it with point-to-point messages.
//
// An exchange of group g (all k members at once, every exchange_every local steps):
//   member i -> server: an ExchangeRequest, then (an update) its slice i of the group's update
//                       (parameters now - parameters at the last read; slices are a contiguous 1/k each);
//   server -> member i: an ExchangeReply (the version now read, the group's next chunk of samples), then
//                       (unless progress only) slice i of the global model after the update, as soon as
//                       member i's slice of the update is applied (the other slices may still arrive).
// A group alone in a phase is data parallelism: its replicas are the global model, so until the phase's
// last chunk its exchanges carry progress only (losses, the next chunk) and no parameters.
// The server applies a group's update once all k requests are in: global += delta / (1 + m / n), where m
// is the samples of the other groups' updates applied since the group's last read and n the samples of
// this update (m / n = s for equal groups); the staleness s, the number of those updates, is what the
// bound counts. A complete request is held while another group still training has already seen
// max_staleness updates since its read (one more would exceed the bound); held requests go oldest read
// first. In deterministic mode the
// groups' requests are applied strictly in turn (0, 1, ..., G-1, 0, ...), which fixes every sum, staleness
// and chunk. Chunks come from the epochs' permutations in order: every sample exactly once per epoch, a
// faster group asking more often and so taking more; a chunk never crosses an epoch or the phase's end.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "lib/cgp/cgp.h"
#include "lib/comm/communicator.h"
#include "lib/train/cgp/cgp_lines.h"
#include "lib/train/strategy.h"

namespace dp::cgp_detail {

inline constexpr int kRequestTag = 900, kSliceTag = 901, kReplyTag = 902, kGlobalTag = 903;

// What an exchange carries: an update (the member's slice of it; the global slice back), a read (no
// update: the first exchange of a phase; the global slice back) or progress only (neither).
enum class ExchangeKind : int32_t { update = 0, read = 1, progress = 2 };

// Member -> server. Trivially copyable.
struct ExchangeRequest {
  int32_t group = 0, member = 0, members = 1;
  ExchangeKind kind = ExchangeKind::update;
  int64_t read_version = 0;     // the version the update was computed from
  int64_t want_samples = 0;     // samples for the group's next exchange_every local steps
  int64_t chunk_begin = 0, chunk_count = 0;  // the chunk this update trained (global sample index)
  double loss_sum = 0;          // this member's loss sum over it
  double lr = 0;                // the learning rate of its last local step
  // This member's measurements since its last exchange, for metrics.jsonl.
  double compute_ms = 0, comm_ms = 0, exchange_ms = 0;
  int64_t samples = 0, local_steps = 0;
  uint64_t samples_digest = 0;  // of the samples this member read in those steps (lib/data/dataset.h)
  int32_t stop_signal = 0;      // the member's pending stop request (stop_signal.h), 0 when none
  // To a follower shard (strategy "cgp-pipeline"): the chunk the leading shard handed the group next.
  int64_t next_begin = 0, next_count = 0, next_remaining = 0;
};

// Server -> member.
struct ExchangeReply {
  int64_t version = 0;          // the global model's version the member now holds
  int64_t chunk_begin = 0, chunk_count = 0;  // 0 samples: the phase is over for the group
  int64_t remaining = 0;        // samples of the phase not yet handed out to any group
  int64_t staleness = 0;        // of the update just applied
  double held_ms = 0;           // how long the complete request was held
};

// The contiguous slice of `count` parameters member `member` of `members` exchanges.
struct Slice {
  int64_t offset = 0, count = 0;
};
Slice slice_of(int64_t count, int member, int members);

// A member's side of one exchange (cgp_group.cpp, and strategy "cgp-pipeline" for a stage's
// parameters): sends `request` to the server at rank 0 of `server` with, for an update, this member's
// slice of `params` minus `read_slice`; waits for the reply and, unless the exchange is progress only,
// for the global slice (into `read_slice`), which `replicas` (the members, in member order) then
// all-gather into `global`, the whole of `params`' global values.
ExchangeReply exchange_slices(Communicator& server, const ExchangeRequest& request, std::span<const float> params,
                              std::vector<float>& read_slice, Communicator& replicas, std::vector<float>& global);

// Where the run is in its samples: global sample index i is position i % n of epoch i / n's permutation;
// step s (0-based) covers the samples of its global batch in its epoch.
struct SampleClock {
  int64_t n = 0, global_batch = 0, steps_per_epoch = 0;
  int64_t step_begin(int64_t step) const {
    return step / steps_per_epoch * n + std::min(step % steps_per_epoch * global_batch, n);
  }
  int64_t step_end(int64_t step) const { return step_begin(step) + std::min(global_batch, n - step % steps_per_epoch * global_batch); }
  int64_t step_of(int64_t sample) const { return sample / n * steps_per_epoch + sample % n / global_batch; }
};

// What the server measured of each group in a phase (the groups in the phase's grouping's order).
struct GroupTally {
  int64_t updates = 0, samples = 0, local_steps = 0;
  double step_ms = 0;       // sum over its exchanges of the slowest member's compute + allreduce time
  double exchange_ms = 0;   // sum over its exchanges of the members' mean exchange time
  double held_ms = 0, staleness = 0;  // sums over its updates
  std::chrono::steady_clock::time_point first{}, last{};  // its first read, its last exchange
};

// The metrics line of a phase that ended after `step`: each group's times as `predicted` has them
// (its groups in the order of their first members, as `tallies`) beside the tallies.
PhaseGroupsLine phase_groups_line(int64_t step, const cgp::Grouping& grouping, const cgp::Prediction& predicted,
                                  const std::vector<GroupTally>& tallies, double phase_seconds);

// Rank 0: the steps a (leading) server completed, in order, to the trainer. Each exchange's rank lines are
// written as they come, whatever [log] every says. A non-finite loss stops the run here (NonFiniteError):
// the groups applied their updates before the server heard of it, so no step can be undone.
void report_steps(std::vector<StepRecord> steps, const StepSink& sink);

class ParameterServer {
 public:
  // On rank 0: `comm` is the server's own communicator (all ranks; its other ranks only send and
  // receive). `global` the initial global model.
  // A follower (strategy "cgp-pipeline": the shard of a stage other than the leading one) hands each
  // group the chunk its request names (ExchangeRequest::next_*), holds no request for staleness (the
  // leading shard does) and records no steps. `rank_names`: the run's rank of each of `comm`'s ranks,
  // for the metrics lines (empty: the same).
  ParameterServer(Communicator& comm, std::vector<float> global, const CgpSection& options, SampleClock clock,
                  int64_t targets_per_sample, bool follower = false, std::vector<int> rank_names = {});
  ~ParameterServer();

  // Before the ranks start a phase (main thread of rank 0, while no exchange is in flight): the grouping
  // and the steps after `done` up to `until`. With `drift` > 0 a rank's compute speed off `speeds` (the
  // grouping's, samples/s per rank) by more than that fraction, the same way, in each of its last 3
  // exchanges (counted across phases while `speeds` stays the same) ends the phase at the end of the
  // step being handed out (or where it ends, when its samples are all handed out) and calls for a
  // regrouping decision.
  void begin_phase(const cgp::Grouping& grouping, int64_t done, int64_t until,
                   const std::vector<double>& speeds = {}, double drift = 0);
  // Blocks until every group has finished the phase; returns the completed steps and the rank lines.
  std::vector<StepRecord> end_phase();
  // Steps completed so far in this phase (for progress while it runs); moved out.
  std::vector<StepRecord> take_completed();
  // After end_phase: every group's tally of the phase, and the phase's wall time.
  const std::vector<GroupTally>& tallies() const { return tallies_; }
  double phase_seconds() const { return phase_seconds_; }
  // After end_phase: the last step of the phase (`until`, or earlier when speeds drifted), why a
  // regrouping decision is due ("" when no speed drifted), and every rank's median speed over its last 3
  // exchanges (samples/s; 0 for a rank that had fewer).
  int64_t reached() const { return reached_; }
  const std::string& drift_reason() const { return drift_reason_; }
  // After end_phase: a member's stop request ended the phase (at the end of the step being handed out
  // when it arrived): its signal and the lowest rank that asked; 0 and -1 when none did.
  int stop_signal() const { return stop_signal_; }
  int stop_rank() const { return stop_rank_; }
  std::vector<double> recent_speeds() const;
  std::span<const float> global() const { return global_; }  // between phases only
  void set_global(std::span<const float> params);
  int64_t version() const { return version_; }

 private:
  struct Pending {
    std::vector<ExchangeRequest> requests;  // by member
    int arrived = 0;
    std::chrono::steady_clock::time_point complete_at{};
  };
  void serve();
  void on_request(int from, const ExchangeRequest& r);
  bool eligible(int group) const;
  void process(int group);
  void account(const ExchangeRequest& leader, double loss_sum, int group, int64_t staleness, double held_ms,
               const std::vector<ExchangeRequest>& members);
  void send(int to, int tag, std::span<const std::byte> bytes);
  void advance_turn();

  Communicator& comm_;
  std::vector<float> global_;
  CgpSection options_;
  bool follower_ = false;
  std::vector<int> rank_names_;
  SampleClock clock_;
  int64_t terms_per_sample_;
  cgp::Grouping grouping_;
  std::vector<std::vector<int>> members_;  // ranks of each group, in group rank order
  std::vector<int64_t> read_version_;
  std::vector<int64_t> read_samples_;  // samples_applied_ at each group's last read
  int64_t samples_applied_ = 0;        // samples of all updates applied so far
  std::vector<bool> stopped_, waiting_;
  std::map<int, Pending> pending_;
  int64_t version_ = 0, cursor_ = 0, boundary_ = 0;
  int turn_ = 0;
  int active_ = 0;  // groups not yet stopped in this phase
  // Step completion: samples and loss per step of the phase, emitted in order.
  int64_t first_step_ = 0, next_emit_ = 0;
  std::vector<int64_t> step_samples_;
  std::vector<double> step_loss_;
  std::vector<TrainLine> lines_;  // rank lines since the last emitted record
  // A step's time (cgp_records.cpp): its samples at the phase's average rate so far (samples applied over
  // the time since the phase began), however many steps one update completes; the phase's last step
  // takes the rest of the phase's time, so that the steps' times add up to it.
  int64_t applied_in_phase_ = 0, emitted_in_phase_ = 0;
  double assigned_seconds_ = 0;  // the phase's time given to its emitted steps
  std::vector<StepRecord> completed_;
  std::vector<GroupTally> tallies_;
  // Drift: the grouping's speeds, the threshold, every rank's last 3 exchange speeds (oldest first).
  std::vector<double> baseline_;
  double drift_ = 0;
  std::vector<std::vector<double>> recent_;
  int64_t reached_ = 0;
  std::string drift_reason_;
  int stop_signal_ = 0, stop_rank_ = -1;
  void watch_drift(const std::vector<ExchangeRequest>& requests, int group);
  void end_after_current_step();
  std::chrono::steady_clock::time_point phase_start_{};
  double phase_seconds_ = 0;
  struct InFlight {
    std::vector<std::byte> data;
    Request request;
  };
  std::vector<InFlight> sends_;  // replies in flight

  std::mutex mutex_;
  std::condition_variable cv_;
  bool phase_running_ = false, shutdown_ = false;
  std::exception_ptr failure_;  // what ended the server thread
  std::thread thread_;
};

}  // namespace dp::cgp_detail
