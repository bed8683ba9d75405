// The parameter server of CGP (cgp_exchange.h): its thread's polling loop over every rank's requests,
// the staleness hold and the deterministic turn, the scaled updates and the chunks of the epochs'
// samples. What it records on the way (the steps' completion, drift) is in cgp_records.cpp.
#include "lib/train/cgp/cgp_exchange.h"

#include <algorithm>
#include <cstring>

#include "lib/core/error.h"
#include "lib/core/trace.h"

namespace dp::cgp_detail {

using Clock = std::chrono::steady_clock;

Slice slice_of(int64_t count, int member, int members) {
  const int64_t base = count / members, extra = count % members;
  return {member * base + std::min<int64_t>(member, extra), base + (member < extra ? 1 : 0)};
}

ExchangeReply exchange_slices(Communicator& server, const ExchangeRequest& request, std::span<const float> params,
                              std::vector<float>& read_slice, Communicator& replicas, std::vector<float>& global) {
  const int k = replicas.size();
  const Slice s = slice_of(int64_t(params.size()), replicas.rank(), k);
  std::vector<float> delta;
  Request sent_req, sent_delta;
  {
    const bool update = request.kind == ExchangeKind::update;
    const TraceScope push("cgp push", {"bytes", update ? s.count * int64_t(sizeof(float)) : 0});
    sent_req = server.isend(std::as_bytes(std::span(&request, 1)), 0, kRequestTag);
    if (update) {
      delta.resize(size_t(s.count));
      for (int64_t j = 0; j < s.count; ++j) delta[size_t(j)] = params[size_t(s.offset + j)] - read_slice[size_t(j)];
      sent_delta = server.isend(std::as_bytes(std::span(delta)), 0, kSliceTag);
    }
  }
  const bool reads = request.kind != ExchangeKind::progress;
  ExchangeReply reply;
  Request got_reply = server.irecv(std::as_writable_bytes(std::span(&reply, 1)), 0, kReplyTag), got_slice;
  if (reads) {
    read_slice.resize(size_t(s.count));
    got_slice = server.irecv(std::as_writable_bytes(std::span(read_slice)), 0, kGlobalTag);
  }
  {
    TraceScope pull("cgp pull (wait for server)", {"bytes", reads ? s.count * int64_t(sizeof(float)) : 0});
    sent_req.wait();
    sent_delta.wait();
    got_reply.wait();
    got_slice.wait();
    pull.set_arg(1, {"version", reply.version});
  }
  if (!reads) return reply;
  // Every member's global slice to every member.
  global.resize(params.size());
  if (k == 1) {
    std::copy(read_slice.begin(), read_slice.end(), global.begin());
    return reply;
  }
  const Slice widest = slice_of(int64_t(params.size()), 0, k);
  std::vector<float> mine(size_t(widest.count), 0.0f), all(size_t(widest.count * k));
  std::copy(read_slice.begin(), read_slice.end(), mine.begin());
  const TraceScope gather("group all-gather", {"bytes", int64_t(all.size() * sizeof(float))});
  replicas.allgather(std::as_bytes(std::span(mine)), std::as_writable_bytes(std::span(all)));
  for (int i = 0; i < k; ++i) {
    const Slice si = slice_of(int64_t(params.size()), i, k);
    std::copy_n(all.begin() + i * widest.count, si.count, global.begin() + si.offset);
  }
  return reply;
}

ParameterServer::ParameterServer(Communicator& comm, std::vector<float> global, const CgpSection& options,
                                 SampleClock clock, int64_t targets_per_sample, bool follower,
                                 std::vector<int> rank_names)
    : comm_(comm), global_(std::move(global)), options_(options), follower_(follower),
      rank_names_(std::move(rank_names)), clock_(clock), terms_per_sample_(targets_per_sample) {
  // The server records on rank 0's "server" track of the tracer of the thread that starts it.
  thread_ = std::thread([this, tracer = trace_of_this_thread()] {
    const TraceThread traced(tracer, "server");
    try {
      serve();
    } catch (...) {  // handed to the training thread, which rethrows it at the phase's end
      std::lock_guard lock(mutex_);
      failure_ = std::current_exception();
      phase_running_ = false;
      cv_.notify_all();
    }
  });
}

ParameterServer::~ParameterServer() {
  {
    std::lock_guard lock(mutex_);
    shutdown_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void ParameterServer::set_global(std::span<const float> params) { global_.assign(params.begin(), params.end()); }

void ParameterServer::begin_phase(const cgp::Grouping& grouping, int64_t done, int64_t until,
                                  const std::vector<double>& speeds, double drift) {
  std::lock_guard lock(mutex_);
  // The ranks' recent speeds outlive pauses (evaluations, checkpoints), which change no speed: a slow
  // rank's few exchanges in short phases still add up to 3. A new baseline starts them afresh.
  if (speeds != baseline_ || recent_.size() != grouping.size()) recent_.assign(grouping.size(), {});
  baseline_ = speeds;
  drift_ = speeds.size() == grouping.size() ? drift : 0;
  reached_ = until;
  drift_reason_.clear();
  stop_signal_ = 0;
  stop_rank_ = -1;
  grouping_ = grouping;
  const int groups = *std::max_element(grouping.begin(), grouping.end()) + 1;
  members_.assign(size_t(groups), {});
  for (int r = 0; r < int(grouping.size()); ++r) members_[size_t(grouping[size_t(r)])].push_back(r);
  read_version_.assign(size_t(groups), version_);
  read_samples_.assign(size_t(groups), samples_applied_);
  stopped_.assign(size_t(groups), false);
  waiting_.assign(size_t(groups), true);  // every group starts with a read
  pending_.clear();
  turn_ = 0;
  active_ = groups;
  cursor_ = clock_.step_begin(done);
  boundary_ = clock_.step_begin(until);
  first_step_ = next_emit_ = done;
  step_samples_.assign(size_t(until - done), 0);
  step_loss_.assign(size_t(until - done), 0.0);
  lines_.clear();
  completed_.clear();
  tallies_.assign(size_t(groups), GroupTally{});
  phase_start_ = Clock::now();
  applied_in_phase_ = emitted_in_phase_ = 0;
  assigned_seconds_ = 0;
  phase_running_ = true;
  cv_.notify_all();
}

std::vector<StepRecord> ParameterServer::end_phase() {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return !phase_running_; });
  if (failure_) std::rethrow_exception(failure_);
  phase_seconds_ = std::chrono::duration<double>(Clock::now() - phase_start_).count();
  return std::move(completed_);
}

std::vector<StepRecord> ParameterServer::take_completed() {
  std::lock_guard lock(mutex_);
  return std::exchange(completed_, {});
}

// Polls every rank's request (messages of one rank arrive in order, so one receive per rank at a time).
void ParameterServer::serve() {
  const int ranks = comm_.size();
  std::vector<ExchangeRequest> inbox(static_cast<size_t>(ranks));
  std::vector<Request> posted(static_cast<size_t>(ranks));
  auto post = [&](int r) {
    posted[size_t(r)] = comm_.irecv(std::as_writable_bytes(std::span(&inbox[size_t(r)], 1)), r, kRequestTag);
  };
  for (int r = 0; r < ranks; ++r) post(r);
  int idle = 0;
  while (true) {
    {
      std::lock_guard lock(mutex_);
      if (shutdown_) return;  // pending receives are cancelled by their destructors
    }
    bool progressed = false;
    for (int r = 0; r < ranks; ++r)
      if (posted[size_t(r)].test()) {
        const ExchangeRequest got = inbox[size_t(r)];
        post(r);
        std::lock_guard lock(mutex_);
        on_request(r, got);
        progressed = true;
      }
    {
      std::lock_guard lock(mutex_);
      // Apply what may be applied: oldest read first (in deterministic mode only the group whose turn it is).
      for (bool again = true; again;) {
        again = false;
        int best = -1;
        for (auto& [g, p] : pending_)
          if (p.arrived == int(members_[size_t(g)].size()) && eligible(g) &&
              (best < 0 || read_version_[size_t(g)] < read_version_[size_t(best)]))
            best = g;
        if (best >= 0) {
          process(best);
          again = progressed = true;
        }
      }
      std::erase_if(sends_, [](InFlight& s) { return s.request.test(); });
      if (phase_running_ && active_ == 0 && sends_.empty()) {
        phase_running_ = false;
        cv_.notify_all();
      }
    }
    idle = progressed ? 0 : idle + 1;
    if (idle > 64) std::this_thread::sleep_for(std::chrono::microseconds(idle > 1024 ? 200 : 20));
  }
}

void ParameterServer::on_request(int from, const ExchangeRequest& r) {
  if (!phase_running_ || r.group < 0 || r.group >= int(members_.size()) || r.member < 0 ||
      r.member >= int(members_[size_t(r.group)].size()) || members_[size_t(r.group)][size_t(r.member)] != from)
    throw RuntimeFailure("cgp server", "an exchange request from rank " + std::to_string(from) +
                                           " does not match the grouping of the phase");
  if (r.stop_signal != 0) {  // a member asks the run to stop: the phase ends after the current step
    if (stop_signal_ == 0 || from < stop_rank_) stop_signal_ = r.stop_signal, stop_rank_ = from;
    end_after_current_step();
  }
  Pending& p = pending_[r.group];
  if (p.requests.empty()) p.requests.resize(members_[size_t(r.group)].size());
  p.requests[size_t(r.member)] = r;
  if (++p.arrived == int(p.requests.size())) p.complete_at = Clock::now();
}

// A group's complete request may be applied now.
bool ParameterServer::eligible(int group) const {
  const int groups = int(members_.size());
  if (options_.deterministic) return group == turn_;
  if (follower_ || pending_.at(group).requests[0].kind != ExchangeKind::update) return true;
  for (int g = 0; g < groups; ++g) {
    if (g == group || stopped_[size_t(g)] || pending_.count(g)) continue;
    if (version_ - read_version_[size_t(g)] >= options_.max_staleness && options_.max_staleness > 0) return false;
  }
  return true;
}

void ParameterServer::process(int group) {
  Pending p = std::move(pending_.at(group));
  pending_.erase(group);
  if (p.requests[0].kind != ExchangeKind::read && !follower_) watch_drift(p.requests, group);
  const std::vector<int>& members = members_[size_t(group)];
  const int k = int(members.size());
  const ExchangeRequest& leader = p.requests[0];
  const bool updates = leader.kind == ExchangeKind::update, replies_global = leader.kind != ExchangeKind::progress;
  const double held_ms = std::chrono::duration<double, std::milli>(Clock::now() - p.complete_at).count();
  const int64_t staleness = updates ? version_ - leader.read_version : 0;
  // Scaled by how far the global model has moved since the read, relative to this update: the samples
  // of the other groups' updates applied meanwhile over this update's samples (s for equal groups).
  const double moved = updates && leader.chunk_count > 0
                           ? double(samples_applied_ - read_samples_[size_t(group)]) / double(leader.chunk_count)
                           : 0;
  const float scale = float(1.0 / (1.0 + moved));
  const int64_t version = updates ? version_ + 1 : version_;
  const TraceScope traced(updates ? "server applies update" : "server answers read", {"group", group},
                          {"staleness", staleness}, {"version", version});
  // The group's next chunk (at most what it asked for, within the epoch and the phase), decided first so
  // that each member's reply can leave as soon as its slice of the update is applied.
  ExchangeReply reply{version, cursor_, 0, 0, staleness, held_ms};
  if (follower_) {
    reply.chunk_begin = leader.next_begin;
    reply.chunk_count = leader.next_count;
    reply.remaining = leader.next_remaining;
  } else {
    const int64_t epoch_end = (cursor_ / clock_.n + 1) * clock_.n;
    reply.chunk_count = std::max<int64_t>(0, std::min({leader.want_samples, epoch_end - cursor_, boundary_ - cursor_}));
    cursor_ += reply.chunk_count;
    reply.remaining = boundary_ - cursor_;
  }
  if (updates) samples_applied_ += leader.chunk_count;
  if (replies_global) {
    read_version_[size_t(group)] = version;
    read_samples_[size_t(group)] = samples_applied_;
  }
  if (reply.chunk_count == 0) {
    stopped_[size_t(group)] = true;
    --active_;
  }
  std::vector<std::vector<float>> delta(static_cast<size_t>(k));
  std::vector<Request> arriving(static_cast<size_t>(k));
  if (updates)
    for (int i = 0; i < k; ++i) {  // all slices in flight at once (each member sent its right after its request)
      delta[size_t(i)].resize(size_t(slice_of(int64_t(global_.size()), i, k).count));
      arriving[size_t(i)] =
          comm_.irecv(std::as_writable_bytes(std::span(delta[size_t(i)])), members[size_t(i)], kSliceTag);
    }
  double loss_sum = 0;
  for (int i = 0; i < k; ++i) {
    const Slice s = slice_of(int64_t(global_.size()), i, k);
    if (updates) {
      arriving[size_t(i)].wait();
      float* g = global_.data() + s.offset;
      for (int64_t j = 0; j < s.count; ++j) g[j] += scale * delta[size_t(i)][size_t(j)];
    }
    loss_sum += p.requests[size_t(i)].loss_sum;
    send(members[size_t(i)], kReplyTag, std::as_bytes(std::span(&reply, 1)));
    if (replies_global)
      send(members[size_t(i)], kGlobalTag, std::as_bytes(std::span(global_).subspan(size_t(s.offset), size_t(s.count))));
  }
  version_ = version;
  GroupTally& tally = tallies_[size_t(group)];
  tally.last = Clock::now();
  if (leader.kind == ExchangeKind::read) {
    tally.first = tally.last;
  } else {
    if (!follower_) account(leader, loss_sum, group, staleness, held_ms, p.requests);
    double slowest = 0, exchange_ms = 0;
    for (const ExchangeRequest& r : p.requests) {
      slowest = std::max(slowest, r.compute_ms + r.comm_ms);
      exchange_ms += r.exchange_ms / k;
    }
    tally.updates += 1;
    tally.samples += leader.chunk_count;
    tally.local_steps += leader.local_steps;
    tally.step_ms += slowest;
    tally.exchange_ms += exchange_ms;
    tally.held_ms += held_ms;
    tally.staleness += double(staleness);
  }
  if (options_.deterministic) advance_turn();
}

void ParameterServer::send(int to, int tag, std::span<const std::byte> bytes) {
  InFlight& f = sends_.emplace_back();
  f.data.assign(bytes.begin(), bytes.end());
  f.request = comm_.isend(f.data, to, tag);
}

void ParameterServer::advance_turn() {
  const int groups = int(members_.size());
  for (int step = 1; step <= groups; ++step) {
    const int g = (turn_ + step) % groups;
    if (!stopped_[size_t(g)]) {
      turn_ = g;
      return;
    }
  }
}

}  // namespace dp::cgp_detail
