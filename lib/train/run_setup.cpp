// Run preparation for trainer.cpp: inputs checked, device chosen, helpers (see run_setup.h).
#include "lib/train/run_setup.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <thread>

#include <sys/resource.h>

#include "kernels/cpu/ops.h"
#include "lib/cluster/cluster.h"
#include "lib/comm/emulated_links.h"
#include "lib/core/error.h"
#include "lib/train/optimizer.h"

namespace dp::train_detail {

// The device this run trains on; bf16 exists only on the GPU.
Device choose_device(const Job& job) {
  const Device device = resolve_device(job.train.device, probe_backends());
  if (job.train.precision == "bf16" && device.kind != "cuda")
    throw JobError("[train] precision", "precision = \"bf16\" needs a GPU; this run trains on " + device.describe(),
                   "use precision = \"fp32\" on the CPU");
  return device;
}

namespace {

// A checkpoint the job's model and optimizer can continue from; CheckpointError otherwise.
void check_resumable(const Checkpoint& c, const std::string& path, const Job& job, const Model& model) {
  const auto optimizer = make_optimizer(job.optim, 0);  // its name and state slots
  if (c.model_fingerprint != model.fingerprint() || c.params.size() != model.params().size())
    throw CheckpointError(path, fmt::format("checkpoint was written by a different model ({} parameters; "
                                            "the job's model is {})", c.params.size(), model.describe()),
                          "resume with the job that wrote it, or start a new run with --out");
  // Strategy "cgp" keeps every group's state, one after another.
  if (c.optimizer != optimizer->name() ||
      c.optimizer_state.size() != c.state_count() * size_t(optimizer->slots()) * model.params().size())
    throw CheckpointError(path, fmt::format("checkpoint holds '{}' optimizer state; the job uses '{}'",
                                            c.optimizer, optimizer->name()),
                          "set [optim] name to the optimizer of the checkpointed run");
}

}  // namespace

// Builds the model on `kernels` (the CPU's when the caller only checks the inputs) and checks the rest.
Setup build_setup(const Job& job, const RunOptions& opts, const Kernels& kernels) {
  Setup s;
  s.dir = run_dir_of(job, opts);
  check_run_dir(s.dir, opts.resume, opts.force);
  s.data = load_dataset(job.data, job.job.seed);
  s.model = make_model(job.model, s.data.train.shape(), job.job.seed, kernels);
  s.steps_per_epoch = steps_per_epoch(s.data.train.count, job.train.global_batch);
  s.total_steps = job.train.steps > 0 ? job.train.steps : job.train.epochs * s.steps_per_epoch;
  if (opts.resume) {
    const std::vector<std::string> all = list_checkpoints(s.dir.checkpoints());
    if (all.empty())
      throw CheckpointError(s.dir.checkpoints(), "no checkpoint to resume from",
                            "run without --resume to start from scratch");
    // The newest checkpoint must read back whole and verified. A damaged one (a disk error, a copy cut
    // short) is an error that names the newest checkpoint that does verify: continuing from an older
    // one is the user's decision, and the damaged file stays as it is.
    std::optional<Checkpoint> found;
    const std::string* path = &all.back();
    try {
      found = read_checkpoint(all.back());
    } catch (const CheckpointError& damaged) {
      for (auto it = all.rbegin() + 1; it != all.rend(); ++it) {
        try {
          (void)read_checkpoint(*it);
        } catch (const CheckpointError&) {
          continue;
        }
        throw CheckpointError(damaged.where(), damaged.message(),
                              fmt::format("the newest checkpoint that verifies is {}: move the damaged one aside to "
                                          "resume from it", *it));
      }
      throw;
    }
    check_resumable(*found, *path, job, *s.model);
    s.resume_from = std::move(found);
  }
  return s;
}

void agree_on_resume(Communicator& comm, Setup& s, const Job& job) {
  if (!s.resume_from || comm.size() == 1) return;
  int64_t step = s.resume_from->step;
  comm.broadcast(std::as_writable_bytes(std::span(&step, 1)), 0);
  const std::string path = checkpoint_path(s.dir.checkpoints(), step);
  if (step != s.resume_from->step) {
    Checkpoint c = read_checkpoint(path);
    check_resumable(c, path, job, *s.model);
    s.resume_from = std::move(c);
  }
}

namespace {
LinkModel job_link(const Job& job) { return {job.cluster.emulate.link_gbps, job.cluster.emulate.link_latency_us}; }

// [cluster.emulate] as_described: every pair of ranks linked as the job's [cluster] says.
LinkMatrix described_links(const Cluster& cluster) {
  const int n = cluster.size();
  LinkMatrix m{n, std::vector<LinkModel>(size_t(n) * size_t(n))};
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      const Link l = cluster.link(a, b);
      m.links[size_t(a) * size_t(n) + size_t(b)] = {l.gbps, l.latency_us};
    }
  return m;
}
}  // namespace

std::unique_ptr<Communicator> paced_by_job_links(const Job& job, Communicator& launched) {
  if (job.cluster.emulate.as_described) {  // wins over link_gbps / link_latency_us
    if (launched.size() != job.launch.ranks)
      throw JobError("[cluster.emulate] as_described",
                     fmt::format("the cluster describes {} rank(s) ([launch] ranks), this launch has {}",
                                 job.launch.ranks, launched.size()),
                     "launch the job's ranks, or set launch.ranks to the launch's");
    return emulate_links(launched, described_links(cluster_from_job(job)));
  }
  const LinkModel link = job_link(job);
  return link.active() ? emulate_links(launched, link) : nullptr;
}

std::string links_text(const Job& job) {
  if (job.cluster.emulate.as_described) {
    const Cluster c = cluster_from_job(job);
    std::string text = "emulated links as [cluster] describes: " + c.describe();
    if (c.has_matrix() && c.size() > 1) {  // the matrix's range, which describe() leaves out
      double lo_gbps = 0, hi_gbps = 0, lo_us = 0, hi_us = 0;
      bool first = true;
      for (int a = 0; a < c.size(); ++a)
        for (int b = 0; b < c.size(); ++b) {
          if (a == b) continue;
          const Link l = c.link(a, b);
          lo_gbps = first ? l.gbps : std::min(lo_gbps, l.gbps);
          hi_gbps = first ? l.gbps : std::max(hi_gbps, l.gbps);
          lo_us = first ? l.latency_us : std::min(lo_us, l.latency_us);
          hi_us = first ? l.latency_us : std::max(hi_us, l.latency_us);
          first = false;
        }
      text += fmt::format(" ({:.3g}-{:.3g} Gbit/s, {:.3g}-{:.3g} us)", lo_gbps, hi_gbps, lo_us, hi_us);
    }
    return text;
  }
  const LinkModel link = job_link(job);
  if (!link.active()) return "";
  return fmt::format("emulated links of {} each way and {:g} us latency",
                     link.gbps > 0 ? fmt::format("{:g} Gbit/s", link.gbps) : std::string("unlimited bandwidth"),
                     link.latency_us);
}

// This rank's index among the ranks on its host (which GPU it drives).
int local_rank(Communicator& comm) {
  std::array<char, 256> mine{};
  const std::string host = comm.host();
  std::memcpy(mine.data(), host.data(), std::min(host.size(), mine.size() - 1));
  const auto all = comm.allgather_value(mine);
  int local = 0;
  for (int r = 0; r < comm.rank(); ++r) local += all[size_t(r)] == mine ? 1 : 0;
  return local;
}

BalanceOptions balance_options(const Job& job, int world) {
  const BalanceSection& b = job.parallel.balance;
  BalanceOptions o;
  o.mode = b.mode;
  o.every = b.every;
  o.threshold = b.threshold;
  o.initial_speeds = b.speeds;
  // Without speeds of its own, I-DAT starts from the speeds [cluster] describes (when it describes the
  // ranks of this launch and they differ): the first step is already divided as the machines are.
  if (o.initial_speeds.empty() && world == job.launch.ranks) {
    const std::vector<double> described = cluster_from_job(job).speeds();
    if (described.size() == size_t(world) &&
        std::adjacent_find(described.begin(), described.end(), std::not_equal_to<>()) != described.end())
      o.initial_speeds = described;
  }
  if (b.max_share > 0) o.max_share.assign(size_t(world), b.max_share);
  return o;
}

std::string shares_text(const std::vector<int64_t>& shares) {
  std::string t;
  for (int64_t v : shares) {
    if (!t.empty()) t += ' ';
    t += std::to_string(v);
  }
  return t;
}

double peak_resident_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return double(usage.ru_maxrss) * 1024;  // Linux reports kilobytes
}

int default_threads(const Job& job, const Communicator& comm) {
  if (job.train.threads > 0) return int(job.train.threads);
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, comm.local_size()));
}

bool paced_by_thread_cpu(const Kernels& kernels) { return kernels.host_memory && cpu::compute_threads() == 1; }

int64_t evaluation_chunk(const Dataset& held_out) { return held_out.context > 0 ? 64 : 1000; }

// Rank 0 evaluates the whole held-out split (test images, or validation text) in chunks.
EvalLine evaluate(Model& model, const Dataset& held_out, int64_t step, int64_t epoch) {
  const int64_t chunk = evaluation_chunk(held_out);
  std::vector<uint32_t> idx;
  BatchBuffer buffer;
  StepStats total;
  for (int64_t begin = 0; begin < held_out.count; begin += chunk) {
    const int64_t n = std::min(chunk, held_out.count - begin);
    idx.resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) idx[size_t(i)] = uint32_t(begin + i);
    const StepStats s = model.evaluate(gather_batch(held_out, idx, buffer));
    total.loss_sum += s.loss_sum;
    total.correct += s.correct;
    total.count += s.count;
  }
  return {step, epoch, total.loss_sum / double(total.count), double(total.correct) / double(total.count)};
}

}  // namespace dp::train_detail
