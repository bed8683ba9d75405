// StageRunner (pipeline_runner.h): one rank's stage through a 1F1B mini-batch.
#include "lib/train/pipeline/pipeline_runner.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <utility>

#include "lib/core/trace.h"
#include "lib/measure/device.h"
#include "lib/pipeline/layout.h"
#include "lib/pipeline/schedule.h"

namespace dp::pipeline_detail {
namespace {

using Clock = std::chrono::steady_clock;
// The operations the slowdown emulator tells apart (the last backward of a step also completes the gradients).
enum OperationKind : int { kForward = 0, kBackward = 1, kLastBackward = 2 };
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// Point-to-point tags on the run's communicator: activations forward, their gradients back.
constexpr int kActivationTag = 101, kGradientTag = 102;

template <class T>
std::span<std::byte> bytes_of(T* p, int64_t count) {
  return std::as_writable_bytes(std::span(p, size_t(count)));
}
template <class T>
std::span<const std::byte> bytes_of(const T* p, int64_t count) {
  return std::as_bytes(std::span(p, size_t(count)));
}

// Waits for every request and forgets them; returns the milliseconds it took. `what` names the wait on
// the trace, with the micro-batch and the first peer.
double wait_for(std::vector<Request>& requests, const char* what, int64_t micro_batch, int peer) {
  if (requests.empty()) return 0;
  const TraceScope traced(what, {"micro_batch", micro_batch}, {"peer", peer}, {"requests", int64_t(requests.size())});
  const auto t0 = Clock::now();
  wait_all(requests);
  requests.clear();
  return ms_since(t0);
}

}  // namespace

// This rank's rows of every micro-batch of a mini-batch of one size, and the pieces it receives and
// sends across its stage's two boundaries (rows within the micro-batch).
struct StageRunner::Layout {
  int64_t batch = 0;
  std::vector<pipeline::Rows> micro;                // the micro-batches' rows of the mini-batch
  std::vector<pipeline::Rows> mine;                 // this rank's rows of each micro-batch
  std::vector<std::vector<pipeline::Piece>> from_previous, to_next;
};

StageRunner::StageRunner(Communicator& comm, Stage& stage, Placement place, GradientSync& sync, const Dataset& data,
                         SlowdownEmulator& emulator, bool paced_by_cpu)
    : comm_(comm), stage_(stage), place_(std::move(place)), sync_(sync), data_(data), emulator_(emulator),
      paced_by_cpu_(paced_by_cpu), k_(stage.kernels()), dy_(k_), dx_(k_) {
  const int slots = pipeline::in_flight(place_.stage, place_.stages(), int(place_.micro_batches));
  for (int i = 0; i < slots; ++i) {
    tokens_.emplace_back(k_);
    targets_.emplace_back(k_);
  }
}

StageRunner::~StageRunner() = default;

const StageRunner::Layout& StageRunner::layout_for(int64_t batch) {
  for (const auto& l : layouts_)
    if (l->batch == batch) return *l;
  auto l = std::make_unique<Layout>();
  l->batch = batch;
  l->micro = pipeline::micro_batch_rows(batch, place_.micro_batches);
  const int s = place_.stage, S = place_.stages(), me = place_.replica;
  for (const pipeline::Rows& mb : l->micro) {
    const auto rows = [&](int stage) { return pipeline::replica_rows(mb.count, place_.shares[size_t(stage)]); };
    const std::vector<pipeline::Rows> here = rows(s);
    l->mine.push_back(here[size_t(me)]);
    std::vector<pipeline::Piece> in, out;
    if (s > 0)
      for (const pipeline::Piece& p : pipeline::boundary_pieces(rows(s - 1), here))
        if (p.to == me) in.push_back(p);
    if (s + 1 < S)
      for (const pipeline::Piece& p : pipeline::boundary_pieces(here, rows(s + 1)))
        if (p.from == me) out.push_back(p);
    l->from_previous.push_back(std::move(in));
    l->to_next.push_back(std::move(out));
  }
  layouts_.push_back(std::move(l));
  return *layouts_.back();
}

// One mini-batch's 1F1B on this rank: the receives and sends it has posted, the peers and micro-batches
// they are for (the trace's), how far it is, and its times.
class StageRunner::MiniBatch {
 public:
  // `data`: where the samples are (the training set, or the held-out split when evaluating).
  MiniBatch(StageRunner& r, const Layout& l, std::span<const uint32_t> samples, float loss_scale, int64_t step,
            const Dataset& data)
      : r_(r), l_(l), samples_(samples), data_(data), loss_scale_(loss_scale), step_(step), s_(r.place_.stage),
        S_(r.place_.stages()), M_(int(l.micro.size())), first_(s_ == 0), last_(s_ + 1 == S_),
        slots_(pipeline::in_flight(s_, S_, M_)), in_floats_(r.stage_.in_floats()), out_floats_(r.stage_.out_floats()),
        previous_(first_ ? r.place_.ranks[0] : r.place_.ranks[size_t(s_) - 1]),
        next_(last_ ? r.place_.ranks[size_t(s_)] : r.place_.ranks[size_t(s_) + 1]),
        inputs_(size_t(M_)), output_sends_(size_t(slots_)), input_peer_(size_t(M_), -1),
        output_peer_(size_t(slots_), -1), output_micro_(size_t(slots_), -1),
        next_input_(first_ ? M_ : 0), next_gradient_(last_ ? M_ : 0) {
    // The last micro-batch's backward makes each block's gradients final as it goes: the replicas start
    // summing them then (MRA's buckets), not after the whole backward.
    // An emulated slow rank hands each part on no earlier than its slow backward would have made it.
    final_gradients_.gradients_ready = [this, &r](int64_t offset) {
      if (pacing_) pacing_();
      r.sync_.gradients_ready(offset - r.stage_.param_begin());
    };
  }

  MiniBatchTimes run(Updater update) {
    r_.sync_.begin_step(std::move(update));
    post_receives();
    for (const pipeline::Op& op : pipeline::schedule_1f1b(s_, S_, M_)) {
      if (op.kind == pipeline::OpKind::forward) forward(op);
      else backward(op);
      post_receives();
    }
    for (size_t i = 0; i < output_sends_.size(); ++i)
      t_.send_ms += wait_for(output_sends_[i], "wait send activations", output_micro_[i], output_peer_[i]);
    t_.send_ms += wait_for(gradient_sends_, "wait send gradients", gradient_sends_micro_, gradient_sends_peer_);
    if (!accumulated_) r_.stage_.zero_grads();  // no rows this mini-batch: nothing to add to the replicas' sum
    t_.sync = r_.sync_.finish_step();
    return t_;
  }

  // Forward only: every micro-batch in order, its slot free again (for the next receive) once its
  // forward is done.
  MiniBatchTimes evaluate() {
    evaluating_ = true;
    next_gradient_ = M_;  // no gradients come back
    post_receives();
    for (int m = 0; m < M_; ++m) {
      forward({pipeline::OpKind::forward, m, m % slots_});
      ++backwards_done_;  // here: micro-batches whose slot is free
      post_receives();
    }
    for (size_t i = 0; i < output_sends_.size(); ++i)
      t_.send_ms += wait_for(output_sends_[i], "wait send activations", output_micro_[i], output_peer_[i]);
    return t_;
  }

 private:
  // Receives whose buffers are free: inputs into free slots, the next output gradient into dy_.
  void post_receives() {
    while (next_input_ < M_ && (next_input_ < slots_ || backwards_done_ > next_input_ - slots_)) {
      const pipeline::Rows mine = l_.mine[size_t(next_input_)];
      float* in = r_.stage_.input(next_input_ % slots_, mine.count);
      for (const pipeline::Piece& p : l_.from_previous[size_t(next_input_)]) {
        const int peer = previous_[size_t(p.from)];
        const TraceScope traced("post recv activations", {"micro_batch", next_input_}, {"peer", peer},
                                {"bytes", p.rows.count * in_floats_ * int64_t(sizeof(float))});
        inputs_[size_t(next_input_)].push_back(r_.comm_.irecv(
            bytes_of(in + (p.rows.begin - mine.begin) * in_floats_, p.rows.count * in_floats_), peer, kActivationTag));
        if (input_peer_[size_t(next_input_)] < 0) input_peer_[size_t(next_input_)] = peer;
      }
      ++next_input_;
    }
    if (next_gradient_ < M_ && next_gradient_ == backwards_done_) {
      const pipeline::Rows mine = l_.mine[size_t(next_gradient_)];
      const MemoryUse use("activation gradients (from the next stage)");
      r_.dy_.grow(size_t(mine.count * out_floats_));
      gradient_in_peer_ = -1;
      gradient_in_micro_ = next_gradient_;
      for (const pipeline::Piece& p : l_.to_next[size_t(next_gradient_)]) {
        const int peer = next_[size_t(p.to)];
        const TraceScope traced("post recv gradients", {"micro_batch", next_gradient_}, {"peer", peer},
                                {"bytes", p.rows.count * out_floats_ * int64_t(sizeof(float))});
        gradient_in_.push_back(r_.comm_.irecv(
            bytes_of(r_.dy_.data() + (p.rows.begin - mine.begin) * out_floats_, p.rows.count * out_floats_), peer,
            kGradientTag));
        if (gradient_in_peer_ < 0) gradient_in_peer_ = peer;
      }
      ++next_gradient_;
    }
  }

  // The compute of one operation, with the emulated slowness of this step: `kind` of operation on `rows`.
  template <class Fn>
  void computed(int kind, int64_t rows, Fn&& fn) {
    const auto t0 = Clock::now();
    const ComputeTimer timer(r_.paced_by_cpu_);
    if (!evaluating_) pacing_ = [&] { r_.emulator_.pace(step_, timer.wall_seconds(), timer.cpu_seconds(), rows, kind); };
    struct Unpaced {
      std::function<void()>& pacing;
      ~Unpaced() { pacing = nullptr; }
    } unpaced{pacing_};
    fn();
    r_.k_.synchronize();
    if (!evaluating_) r_.emulator_.delay(step_, timer.wall_seconds(), timer.cpu_seconds(), rows, kind);
    t_.compute_ms += ms_since(t0);
  }

  // The first stage's inputs and the last stage's targets of micro-batch m (this rank's rows of it) from
  // the dataset, into the slot's buffers. Returns the token ids' and targets' device pointers (or null).
  std::pair<const int32_t*, const int32_t*> load_rows(const pipeline::Op& op, size_t m, int64_t n) {
    const int32_t *tokens = nullptr, *targets = nullptr;
    const Batch b =
        gather_batch(data_, samples_.subspan(size_t(l_.micro[m].begin + l_.mine[m].begin), size_t(n)), r_.host_);
    if (first_ && b.x) r_.stage_.upload_input(op.slot, std::span(b.x, size_t(n * in_floats_)));
    if (first_ && b.tokens) {
      const size_t count = size_t(n * data_.context);
      const MemoryUse use("token ids");
      r_.tokens_[size_t(op.slot)].grow(count);
      r_.tokens_[size_t(op.slot)].upload(std::span(b.tokens, count));
      tokens = r_.tokens_[size_t(op.slot)].data();
    }
    if (last_) {
      const size_t count = size_t(n * std::max<int64_t>(1, data_.context));
      const MemoryUse use("targets");
      r_.targets_[size_t(op.slot)].grow(count);
      r_.targets_[size_t(op.slot)].upload(std::span(b.targets, count));
      targets = r_.targets_[size_t(op.slot)].data();
    }
    return {tokens, targets};
  }

  void forward(const pipeline::Op& op) {
    const size_t m = size_t(op.micro_batch);
    const pipeline::Rows mine = l_.mine[m];
    const int64_t n = mine.count;
    t_.wait_ms += wait_for(inputs_[m], "wait recv activations", int64_t(m), input_peer_[m]);
    std::pair<const int32_t*, const int32_t*> ids{nullptr, nullptr};
    if ((first_ || last_) && n > 0) ids = load_rows(op, m, n);
    const size_t slot = size_t(op.slot);
    t_.send_ms += wait_for(output_sends_[slot], "wait send activations", output_micro_[slot],
                           output_peer_[slot]);  // the slot's outputs are written again
    if (n > 0) {
      computed(kForward, n, [&] {
        const TraceScope traced("forward", {"micro_batch", int64_t(m)}, {"samples", n});
        const StepStats st = r_.stage_.forward(op.slot, ids.first, ids.second, n, loss_scale_);
        t_.stats.loss_sum += st.loss_sum;
        t_.stats.correct += st.correct;
        t_.stats.count += st.count;
      });
      t_.rows += n;
    }
    const float* out = r_.stage_.output(op.slot);
    output_peer_[slot] = -1;
    output_micro_[slot] = int64_t(m);
    for (const pipeline::Piece& p : l_.to_next[m]) {
      const int peer = next_[size_t(p.to)];
      const TraceScope traced("send activations", {"micro_batch", int64_t(m)}, {"peer", peer},
                              {"bytes", p.rows.count * out_floats_ * int64_t(sizeof(float))});
      output_sends_[slot].push_back(r_.comm_.isend(
          bytes_of(out + (p.rows.begin - mine.begin) * out_floats_, p.rows.count * out_floats_), peer, kActivationTag));
      if (output_peer_[slot] < 0) output_peer_[slot] = peer;
    }
  }

  void backward(const pipeline::Op& op) {
    const size_t m = size_t(op.micro_batch);
    const pipeline::Rows mine = l_.mine[m];
    const int64_t n = mine.count;
    t_.wait_ms += wait_for(gradient_in_, "wait recv gradients", gradient_in_micro_, gradient_in_peer_);
    t_.send_ms += wait_for(gradient_sends_, "wait send gradients", gradient_sends_micro_,
                           gradient_sends_peer_);  // dx_ is written again
    if (n > 0) {
      if (!first_) {
        const MemoryUse use("activation gradients (to the previous stage)");
        r_.dx_.grow(size_t(n * in_floats_));
      }
      computed(op.micro_batch + 1 == M_ ? kLastBackward : kBackward, n, [&] {  // the last one completes the gradients
        const TraceScope traced("backward", {"micro_batch", int64_t(m)}, {"samples", n});
        r_.stage_.backward(op.slot, last_ ? nullptr : r_.dy_.data(), first_ ? nullptr : r_.dx_.data(), accumulated_,
                           op.micro_batch + 1 == M_ ? final_gradients_ : none_);
      });
      accumulated_ = true;
    }
    ++backwards_done_;
    gradient_sends_peer_ = -1;
    gradient_sends_micro_ = int64_t(m);
    for (const pipeline::Piece& p : l_.from_previous[m]) {
      const int peer = previous_[size_t(p.from)];
      const TraceScope traced("send gradients", {"micro_batch", int64_t(m)}, {"peer", peer},
                              {"bytes", p.rows.count * in_floats_ * int64_t(sizeof(float))});
      gradient_sends_.push_back(r_.comm_.isend(
          bytes_of(static_cast<const float*>(r_.dx_.data()) + (p.rows.begin - mine.begin) * in_floats_,
                   p.rows.count * in_floats_),
          peer, kGradientTag));
      if (gradient_sends_peer_ < 0) gradient_sends_peer_ = peer;
    }
  }

  StageRunner& r_;
  const Layout& l_;
  std::span<const uint32_t> samples_;
  const Dataset& data_;
  float loss_scale_;
  int64_t step_;
  const int s_, S_, M_;
  const bool first_, last_;
  const int slots_;
  const int64_t in_floats_, out_floats_;
  const std::vector<int>& previous_;  // the previous stage's ranks (inputs come from them)
  const std::vector<int>& next_;      // the next stage's (outputs go to them)
  MiniBatchTimes t_;
  std::vector<std::vector<Request>> inputs_, output_sends_;
  std::vector<Request> gradient_in_, gradient_sends_;
  std::vector<int> input_peer_, output_peer_;
  std::vector<int64_t> output_micro_;
  int gradient_in_peer_ = -1, gradient_sends_peer_ = -1;
  int64_t gradient_in_micro_ = -1, gradient_sends_micro_ = -1;
  int next_input_, next_gradient_, backwards_done_ = 0;
  BlockHooks final_gradients_;
  std::function<void()> pacing_;  // while an operation computes: SlowdownEmulator::pace for it
  const BlockHooks none_;
  bool accumulated_ = false;
  bool evaluating_ = false;
};

MiniBatchTimes StageRunner::run(std::span<const uint32_t> samples, float loss_scale, Updater update, int64_t step) {
  MiniBatch minibatch(*this, layout_for(int64_t(samples.size())), samples, loss_scale, step, data_);
  return minibatch.run(std::move(update));
}

StepStats StageRunner::evaluate(std::span<const uint32_t> samples, const Dataset& held_out) {
  MiniBatch minibatch(*this, layout_for(int64_t(samples.size())), samples, 1.0f, 0, held_out);
  return minibatch.evaluate().stats;
}

StepStats StageRunner::evaluate_all(const Dataset& held_out, int64_t batch) {
  StepStats total;
  std::vector<uint32_t> samples;
  for (int64_t begin = 0; begin < held_out.count; begin += batch) {
    const int64_t n = std::min(batch, held_out.count - begin);
    samples.resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) samples[size_t(i)] = uint32_t(begin + i);
    const StepStats s = evaluate(samples, held_out);
    total.loss_sum += s.loss_sum;
    total.correct += s.correct;
    total.count += s.count;
  }
  return total;
}

StageParts build_stage_parts(const Job& job, Model& model, const pipeline::Stage& st, const Placement& place,
                             Communicator& comm, Communicator& replicas, const Dataset& data,
                             SlowdownEmulator& emulator, const Kernels& kernels) {
  StageParts p;
  std::vector<bool> recompute(size_t(st.last - st.first + 1), false);
  for (int b : st.recompute) recompute[size_t(b - st.first)] = true;
  p.stage = std::make_unique<Stage>(model, st.first, st.last,
                                    pipeline::in_flight(place.stage, place.stages(), int(place.micro_batches)),
                                    recompute);
  std::vector<ParamRange> ranges;  // the stage's blocks, in its own offsets
  for (int b = st.first; b <= st.last; ++b) {
    const BlockShape& shape = model.block(b).shape();
    if (shape.param_count > 0) ranges.push_back({shape.param_offset - p.stage->param_begin(), shape.param_count});
  }
  GradSyncOptions options = grad_sync_options(job.parallel.comm);
  if (replicas.size() == 1) options.algorithm = CommAlgorithm::native;  // nothing to sum: update in place
  p.sync = make_gradient_sync(options, replicas, p.stage->params(), p.stage->grads(), ranges);
  p.optimizer = make_optimizer(job.optim, p.sync->state_count(), kernels);
  p.runner = std::make_unique<StageRunner>(comm, *p.stage, place, *p.sync, data, emulator, paced_by_thread_cpu(kernels));
  return p;
}

}  // namespace dp::pipeline_detail
