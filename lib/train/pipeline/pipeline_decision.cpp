// Sending rank 0's pipeline plan (pipeline_decision.h): the plan as numbers, the error as text.
#include "lib/train/pipeline/pipeline_decision.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "lib/balance/emulate.h"
#include "lib/core/error.h"
#include "lib/core/memory_meter.h"
#include "lib/measure/layer_profile.h"
#include "lib/measure/pipeline_plan.h"

namespace dp::pipeline_detail {
namespace {

constexpr int kPlanTag = 103;

// Rank 0's plan as numbers: M, then per stage first, last, its ranks, their rows of a micro-batch and
// its recomputed blocks (each list preceded by its length).
std::vector<int64_t> encode(const pipeline::PlanResult& r) {
  std::vector<int64_t> out = {r.plan.micro_batches, int64_t(r.plan.stages.size())};
  for (size_t s = 0; s < r.plan.stages.size(); ++s) {
    const pipeline::Stage& st = r.plan.stages[s];
    out.insert(out.end(), {st.first, st.last, int64_t(st.ranks.size())});
    out.insert(out.end(), st.ranks.begin(), st.ranks.end());
    const auto& shares = r.prediction.stages[s].shares;
    out.insert(out.end(), shares.begin(), shares.end());
    out.push_back(int64_t(st.recompute.size()));
    out.insert(out.end(), st.recompute.begin(), st.recompute.end());
  }
  return out;
}

struct Decoded {
  pipeline::Plan plan;
  std::vector<std::vector<int64_t>> shares;
};
Decoded decode(const std::vector<int64_t>& v) {
  Decoded d;
  size_t at = 0;
  auto next = [&] { return v.at(at++); };
  d.plan.micro_batches = next();
  const int64_t stages = next();
  for (int64_t s = 0; s < stages; ++s) {
    pipeline::Stage st;
    st.first = int(next());
    st.last = int(next());
    const int64_t k = next();
    for (int64_t i = 0; i < k; ++i) st.ranks.push_back(int(next()));
    std::vector<int64_t> shares;
    for (int64_t i = 0; i < k; ++i) shares.push_back(next());
    const int64_t r = next();
    for (int64_t i = 0; i < r; ++i) st.recompute.push_back(int(next()));
    d.plan.stages.push_back(std::move(st));
    d.shares.push_back(std::move(shares));
  }
  return d;
}

// Sends rank 0's bytes to every rank. The others wait asleep (MPI's own broadcast would spin on the cores
// rank 0 is timing the model's blocks on).
std::vector<std::byte> send_from_rank0(Communicator& comm, std::vector<std::byte> bytes) {
  int64_t size = int64_t(bytes.size());
  if (comm.rank() == 0) {
    std::vector<Request> sent;
    for (int r = 1; r < comm.size(); ++r) sent.push_back(comm.isend(std::as_bytes(std::span(&size, 1)), r, kPlanTag));
    wait_all(sent);
  } else {
    Request r = comm.irecv(std::as_writable_bytes(std::span(&size, 1)), 0, kPlanTag);
    while (!r.test()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  bytes.resize(size_t(size));
  if (size > 0) comm.broadcast(bytes, 0);
  return bytes;
}

// Rank 0's decision: the encoded plan, or the input error every rank then throws alike.
struct Decision {
  std::vector<int64_t> plan;
  std::string error_where, error_what, error_hint;
};
std::vector<std::byte> pack(const Decision& d) {
  std::string text = d.error_where + '\n' + d.error_what + '\n' + d.error_hint + '\n';
  std::vector<std::byte> out(sizeof(int64_t) * (1 + d.plan.size()) + text.size());
  const int64_t n = int64_t(d.plan.size());
  std::memcpy(out.data(), &n, sizeof n);
  // An error carries no plan: an empty vector's data() may be null, which memcpy must not get.
  if (n > 0) std::memcpy(out.data() + sizeof n, d.plan.data(), d.plan.size() * sizeof(int64_t));
  std::memcpy(out.data() + sizeof n + d.plan.size() * sizeof(int64_t), text.data(), text.size());
  return out;
}
Decision unpack(const std::vector<std::byte>& in) {
  Decision d;
  int64_t n = 0;
  std::memcpy(&n, in.data(), sizeof n);
  d.plan.resize(size_t(n));
  if (n > 0) std::memcpy(d.plan.data(), in.data() + sizeof n, size_t(n) * sizeof(int64_t));
  const size_t at = sizeof n + size_t(n) * sizeof(int64_t);
  std::string text(reinterpret_cast<const char*>(in.data()) + at, in.size() - at);
  const size_t a = text.find('\n'), b = text.find('\n', a + 1), c = text.find('\n', b + 1);
  d.error_where = text.substr(0, a);
  d.error_what = text.substr(a + 1, b - a - 1);
  d.error_hint = text.substr(b + 1, c - b - 1);
  return d;
}

}  // namespace

TimedBlocks time_blocks_everywhere(const Job& job, Communicator& comm, Model& model, const Dataset& data) {
  comm.barrier();  // every rank has its data: none times its blocks while others still read theirs
  MemoryMeter::process().set_role("pipeline rank timing the blocks one at a time");
  TimedBlocks t;
  // Not at four times the micro-batch: a rank's probe stays within the memory its stage is planned to hold.
  t.profile = profile_blocks(job, model, data, profile_micro_batch(job), 5, 2, ProfileSizes::without_larger);
  double ms = 0;
  for (const pipeline::BlockRow& b : t.profile.blocks) ms += b.forward_ms + b.backward_ms;
  ms *= SlowdownEmulator(job, comm.rank()).factor(0);  // the speed at the run's start
  model.release_working_memory();  // a stage grows it at its own micro-batch, under its meter
  t.step_ms = comm.allgather_value(ms);
  t.local_batch = comm.allgather_value(t.profile.micro_batch);
  return t;
}

SharedPlan share_rank0_plan(Communicator& comm, const std::function<pipeline::PlanResult()>& choose) {
  Decision d;
  if (comm.rank() == 0) {
    try {
      d.plan = encode(choose());
    } catch (const InputError& e) {
      d.error_where = e.where();
      d.error_what = e.message();
      d.error_hint = e.hint();
    }
  }
  const Decision got = unpack(send_from_rank0(comm, pack(d)));
  if (!got.error_what.empty()) throw JobError(got.error_where, got.error_what, got.error_hint);
  const Decoded plan = decode(got.plan);
  return {plan.plan, plan.shares};
}

Placement placement_of(const SharedPlan& shared, int rank) {
  Placement place;
  place.micro_batches = shared.plan.micro_batches;
  place.shares = shared.shares;
  for (size_t s = 0; s < shared.plan.stages.size(); ++s) {
    const auto& ranks = shared.plan.stages[s].ranks;
    place.ranks.push_back(ranks);
    const auto at = std::find(ranks.begin(), ranks.end(), rank);
    if (at != ranks.end()) {
      place.stage = int(s);
      place.replica = int(at - ranks.begin());
    }
  }
  return place;
}

}  // namespace dp::pipeline_detail
