// StageRunner (pipeline_runner.h): one rank's stage through a 1F1B mini-batch.
#include "lib/train/pipeline_runner.h"

#include <chrono>

#include "lib/core/trace.h"
#include "lib/pipeline/layout.h"
#include "lib/pipeline/schedule.h"

namespace dp::pipeline_detail {
namespace {

using Clock = std::chrono::steady_clock;
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

MiniBatchTimes StageRunner::run(std::span<const uint32_t> samples, float loss_scale, Updater update, int64_t step) {
  const Layout& l = layout_for(int64_t(samples.size()));
  const int s = place_.stage, S = place_.stages(), M = int(l.micro.size());
  const bool first = s == 0, last = s + 1 == S;
  const int slots = pipeline::in_flight(s, S, M);
  const int64_t in_floats = stage_.in_floats(), out_floats = stage_.out_floats();
  const std::vector<int>& previous = first ? place_.ranks[0] : place_.ranks[size_t(s) - 1];
  const std::vector<int>& next = last ? place_.ranks[size_t(s)] : place_.ranks[size_t(s) + 1];
  MiniBatchTimes t;

  std::vector<std::vector<Request>> inputs(static_cast<size_t>(M)), output_sends(static_cast<size_t>(slots));
  std::vector<Request> gradient_in, gradient_sends;
  // The peers and micro-batches of the waits, for the trace: the first piece's rank of each.
  std::vector<int> input_peer(size_t(M), -1), output_peer(size_t(slots), -1);
  std::vector<int64_t> output_micro(size_t(slots), -1);
  int gradient_in_peer = -1, gradient_sends_peer = -1;
  int64_t gradient_in_micro = -1, gradient_sends_micro = -1;
  int next_input = first ? M : 0, next_gradient = last ? M : 0, backwards_done = 0;
  // Receives whose buffers are free: inputs into free slots, the next output gradient into dy_.
  auto post_receives = [&] {
    while (next_input < M && (next_input < slots || backwards_done > next_input - slots)) {
      const pipeline::Rows mine = l.mine[size_t(next_input)];
      float* in = stage_.input(next_input % slots, mine.count);
      for (const pipeline::Piece& p : l.from_previous[size_t(next_input)]) {
        const TraceScope traced("post recv activations", {"micro_batch", next_input}, {"peer", previous[size_t(p.from)]},
                                {"bytes", p.rows.count * in_floats * int64_t(sizeof(float))});
        inputs[size_t(next_input)].push_back(comm_.irecv(
            bytes_of(in + (p.rows.begin - mine.begin) * in_floats, p.rows.count * in_floats),
            previous[size_t(p.from)], kActivationTag));
        if (input_peer[size_t(next_input)] < 0) input_peer[size_t(next_input)] = previous[size_t(p.from)];
      }
      ++next_input;
    }
    if (next_gradient < M && next_gradient == backwards_done) {
      const pipeline::Rows mine = l.mine[size_t(next_gradient)];
      dy_.grow(size_t(mine.count * out_floats));
      gradient_in_peer = -1;
      gradient_in_micro = next_gradient;
      for (const pipeline::Piece& p : l.to_next[size_t(next_gradient)]) {
        const TraceScope traced("post recv gradients", {"micro_batch", next_gradient}, {"peer", next[size_t(p.to)]},
                                {"bytes", p.rows.count * out_floats * int64_t(sizeof(float))});
        gradient_in.push_back(comm_.irecv(
            bytes_of(dy_.data() + (p.rows.begin - mine.begin) * out_floats, p.rows.count * out_floats),
            next[size_t(p.to)], kGradientTag));
        if (gradient_in_peer < 0) gradient_in_peer = next[size_t(p.to)];
      }
      ++next_gradient;
    }
  };
  // The compute of one operation, with the emulated slowness of this step.
  auto computed = [&](auto&& fn) {
    const auto t0 = Clock::now();
    const ComputeTimer timer(paced_by_cpu_);
    fn();
    k_.synchronize();
    emulator_.delay(step, timer.wall_seconds(), timer.cpu_seconds());
    t.compute_ms += ms_since(t0);
  };

  sync_.begin_step(std::move(update));
  // The last micro-batch's backward makes each block's gradients final as it goes: the replicas start
  // summing them then (MRA's buckets), not after the whole backward.
  BlockHooks final_gradients;
  final_gradients.gradients_ready = [this](int64_t offset) { sync_.gradients_ready(offset - stage_.param_begin()); };
  const BlockHooks none;
  bool accumulated = false;
  post_receives();
  for (const pipeline::Op& op : pipeline::schedule_1f1b(s, S, M)) {
    const size_t m = size_t(op.micro_batch);
    const pipeline::Rows mine = l.mine[m];
    const int64_t n = mine.count;
    if (op.kind == pipeline::OpKind::forward) {
      t.wait_ms += wait_for(inputs[m], "wait recv activations", int64_t(m), input_peer[m]);
      const int32_t *tokens = nullptr, *targets = nullptr;
      if ((first || last) && n > 0) {  // this rank's rows of the micro-batch, from the dataset
        const Batch b = gather_batch(data_, samples.subspan(size_t(l.micro[m].begin + mine.begin), size_t(n)), host_);
        if (first && b.x) stage_.upload_input(op.slot, std::span(b.x, size_t(n * in_floats)));
        if (first && b.tokens) {
          const size_t count = size_t(n * data_.context);
          tokens_[size_t(op.slot)].grow(count);
          tokens_[size_t(op.slot)].upload(std::span(b.tokens, count));
          tokens = tokens_[size_t(op.slot)].data();
        }
        if (last) {
          const size_t count = size_t(n * std::max<int64_t>(1, data_.context));
          targets_[size_t(op.slot)].grow(count);
          targets_[size_t(op.slot)].upload(std::span(b.targets, count));
          targets = targets_[size_t(op.slot)].data();
        }
      }
      t.send_ms += wait_for(output_sends[size_t(op.slot)], "wait send activations", output_micro[size_t(op.slot)],
                            output_peer[size_t(op.slot)]);  // the slot's outputs are written again
      if (n > 0) {
        computed([&] {
          const TraceScope traced("forward", {"micro_batch", int64_t(m)}, {"samples", n});
          const StepStats st = stage_.forward(op.slot, tokens, targets, n, loss_scale);
          t.stats.loss_sum += st.loss_sum;
          t.stats.correct += st.correct;
          t.stats.count += st.count;
        });
        t.rows += n;
      }
      const float* out = stage_.output(op.slot);
      output_peer[size_t(op.slot)] = -1;
      output_micro[size_t(op.slot)] = int64_t(m);
      for (const pipeline::Piece& p : l.to_next[m]) {
        const TraceScope traced("send activations", {"micro_batch", int64_t(m)}, {"peer", next[size_t(p.to)]},
                                {"bytes", p.rows.count * out_floats * int64_t(sizeof(float))});
        output_sends[size_t(op.slot)].push_back(
            comm_.isend(bytes_of(out + (p.rows.begin - mine.begin) * out_floats, p.rows.count * out_floats),
                        next[size_t(p.to)], kActivationTag));
        if (output_peer[size_t(op.slot)] < 0) output_peer[size_t(op.slot)] = next[size_t(p.to)];
      }
    } else {
      t.wait_ms += wait_for(gradient_in, "wait recv gradients", gradient_in_micro, gradient_in_peer);
      t.send_ms += wait_for(gradient_sends, "wait send gradients", gradient_sends_micro,
                            gradient_sends_peer);  // dx_ is written again
      if (n > 0) {
        if (!first) dx_.grow(size_t(n * in_floats));
        computed([&] {
          const TraceScope traced("backward", {"micro_batch", int64_t(m)}, {"samples", n});
          stage_.backward(op.slot, last ? nullptr : dy_.data(), first ? nullptr : dx_.data(), accumulated,
                          op.micro_batch + 1 == M ? final_gradients : none);
        });
        accumulated = true;
      }
      ++backwards_done;
      gradient_sends_peer = -1;
      gradient_sends_micro = int64_t(m);
      for (const pipeline::Piece& p : l.from_previous[m]) {
        const TraceScope traced("send gradients", {"micro_batch", int64_t(m)}, {"peer", previous[size_t(p.from)]},
                                {"bytes", p.rows.count * in_floats * int64_t(sizeof(float))});
        gradient_sends.push_back(
            comm_.isend(bytes_of(static_cast<const float*>(dx_.data()) + (p.rows.begin - mine.begin) * in_floats,
                                 p.rows.count * in_floats),
                        previous[size_t(p.from)], kGradientTag));
        if (gradient_sends_peer < 0) gradient_sends_peer = previous[size_t(p.from)];
      }
    }
    post_receives();
  }
  for (size_t i = 0; i < output_sends.size(); ++i)
    t.send_ms += wait_for(output_sends[i], "wait send activations", output_micro[i], output_peer[i]);
  t.send_ms += wait_for(gradient_sends, "wait send gradients", gradient_sends_micro, gradient_sends_peer);
  if (!accumulated) stage_.zero_grads();  // no rows this mini-batch: nothing to add to the replicas' sum
  t.sync = sync_.finish_step();
  return t;
}

}  // namespace dp::pipeline_detail
