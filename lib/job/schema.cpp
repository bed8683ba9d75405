// The job schema: one row per key (table, name, Job field, range check). An enumerated key's field is an
// enum whose names lib/job/job_enums.h holds; extend them there (and in man/dptrain-job.5). A nested table is a
// dotted table name ("parallel.comm"); its rows follow its parent's. Lookups are in schema_lookup.cpp, the
// generic range rules in schema_rules.h, the cross-key checks of [parallel.balance] and [cluster.emulate]
// in schema_balance.cpp.
#include "lib/job/schema.h"

#include <fmt/format.h>

#include <algorithm>

#include "lib/job/schema_rules.h"

namespace dp::job_detail {

std::string number_text(double v) { return fmt::format("{}", v); }

// --- Checks of single keys (the generic rules are in schema_rules.h) ------------------------------------
static Check check_name(const Job& j) {
  const std::string& n = j.job.name;
  if (n.empty())
    return Problem{"must not be empty", -1, "the name is used for the output folder runs/<name>"};
  const bool ok = std::all_of(n.begin(), n.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
  if (!ok)
    return Problem{fmt::format("may contain only letters, digits, '.', '_' and '-', got '{}'", n), -1,
                   "the name is used for the output folder runs/<name>"};
  if (n == "." || n == "..") return Problem{fmt::format("must not be '{}'", n)};
  return std::nullopt;
}

static Check check_hidden(const Job& j) {
  const auto& h = j.model.hidden;
  if (h.empty()) return Problem{"must not be empty", -1, "give the hidden layer widths, e.g. [256, 128]"};
  for (std::size_t i = 0; i < h.size(); ++i)
    if (auto p = at_least(h[i], 1)) return Problem{p->what, static_cast<int>(i)};
  return std::nullopt;
}

static Check check_hosts(const Job& j) {
  const auto& h = j.launch.hosts;
  for (std::size_t i = 0; i < h.size(); ++i)
    if (h[i].empty())
      return Problem{"must not be empty", static_cast<int>(i), "write hosts as \"name:slots\""};
  return std::nullopt;
}

static Check check_hostfile(const Job& j) {
  if (j.launch.hostfile.empty() || j.launch.hosts.empty()) return std::nullopt;
  return Problem{"is given with launch.hosts", -1, "name the machines in one of them: hosts or hostfile"};
}

static Check check_launcher(const Job& j) {
  const auto& l = j.launch;
  if (l.launcher != Launcher::srun || l.hostfile.empty()) return std::nullopt;
  return Problem{"srun runs on the Slurm allocation's nodes (launch.hosts may name some of them), not on "
                 "launch.hostfile", -1, "name the nodes in launch.hosts, or use launcher = \"mpirun\""};
}

static Check check_min_lr(const Job& j) {
  if (auto p = non_negative(j.optim.min_lr)) return p;
  if (j.optim.min_lr <= j.optim.lr) return std::nullopt;
  return Problem{fmt::format("must not exceed optim.lr ({}), got {}", number_text(j.optim.lr),
                             number_text(j.optim.min_lr))};
}

static Check check_channels(const Job& j) {
  const auto& c = j.model.channels;
  if (c.empty()) return Problem{"must not be empty", -1, "give the width of each stage, e.g. [16, 32]"};
  for (std::size_t i = 0; i < c.size(); ++i)
    if (auto p = at_least(c[i], 1)) return Problem{p->what, static_cast<int>(i)};
  return std::nullopt;
}

static Check check_heads(const Job& j) {
  if (auto p = at_least(j.model.heads, 1)) return p;
  if (j.model.width % j.model.heads == 0) return std::nullopt;
  return Problem{fmt::format("must divide model.width ({}), got {}", j.model.width, j.model.heads), -1,
                 "each head gets width / heads channels"};
}

// The samples must fit the model's position table (only meaningful for language models on text).
static Check check_context(const Job& j) {
  if (auto p = at_least(j.data.context, 1)) return p;
  if (j.model.type != ModelType::gpt || j.data.context <= j.model.context) return std::nullopt;
  return Problem{fmt::format("samples of {} tokens are longer than the model's position table (model.context "
                             "= {})", j.data.context, j.model.context),
                 -1, "lower data.context or raise model.context"};
}

static Check check_val_fraction(const Job& j) {
  const double v = j.data.val_fraction;
  if (v > 0 && v < 1) return std::nullopt;
  return Problem{"must be in (0, 1), got " + number_text(v)};
}

// The first bucket (the last layers) must not be larger than the others.
static Check check_first_bucket(const Job& j) {
  const CommSection& c = j.parallel.comm;
  if (auto p = positive(c.first_bucket_mb)) return p;
  if (c.first_bucket_mb <= c.bucket_mb) return std::nullopt;
  return Problem{fmt::format("must not exceed parallel.comm.bucket_mb ({}), got {}", number_text(c.bucket_mb),
                             number_text(c.first_bucket_mb)),
                 -1, "lower parallel.comm.first_bucket_mb or raise parallel.comm.bucket_mb",
                 "parallel.comm.bucket_mb"};
}

// Micro-batches cut the global batch into equal parts.
static Check check_micro_batches(const Job& j) {
  const int64_t m = j.parallel.pipeline.micro_batches, batch = j.train.global_batch;
  if (auto p = at_least(m, 0)) return p;
  if (m == 0 || batch < 1 || batch % m == 0) return std::nullopt;
  return Problem{fmt::format("{} micro-batches do not divide train.global_batch ({})", m, batch), -1,
                 "give a divisor of the global batch, or 0 to let the planner choose", "train.global_batch"};
}

// [train] micro_batch and recompute act on a replica's step (strategies data and cgp); a pipeline's stages
// have their own (parallel.pipeline.micro_batches and recompute).
static Check not_for_pipeline(const Job& j, bool set, const char* instead) {
  const StrategyKind k = j.parallel.strategy;
  if (!set || (k != StrategyKind::pipeline && k != StrategyKind::cgp_pipeline)) return std::nullopt;
  return Problem{fmt::format("applies to strategies \"data\" and \"cgp\", not to \"{}\"", name_of(k)), -1,
                 fmt::format("a pipeline's stages use parallel.pipeline.{}", instead), "parallel.strategy"};
}
static Check check_train_micro_batch(const Job& j) {
  if (auto p = at_least(j.train.micro_batch, 0)) return p;
  return not_for_pipeline(j, j.train.micro_batch > 0, "micro_batches");
}
static Check check_train_recompute(const Job& j) {
  return not_for_pipeline(j, j.train.recompute != TrainRecompute::none, "recompute");
}

// --- The schema ------------------------------------------------------------------------------------------
#define DP_FIELD(member) [](Job& j) -> FieldRef { return &j.member; }
#define DP_ENUM(member) [](Job& j) -> FieldRef { return enum_ref(&j.member); }
#define DP_ENUM_FOLDED(member) [](Job& j) -> FieldRef { return enum_ref(&j.member, true); }
#define DP_RULE(expr) [](const Job& j) -> Check { return expr; }

// clang-format off
const std::vector<KeySpec>& schema() {
  static const std::vector<KeySpec> keys = {
      {"job", "name", DP_FIELD(job.name), check_name},
      {"job", "seed", DP_FIELD(job.seed), nullptr},  // >= 0: checked while reading
      {"job", "output_dir", DP_FIELD(job.output_dir), nullptr},

      {"model", "type", DP_ENUM(model.type), nullptr},
      {"model", "hidden", DP_FIELD(model.hidden), check_hidden},
      {"model", "channels", DP_FIELD(model.channels), check_channels},
      {"model", "blocks", DP_FIELD(model.blocks), DP_RULE(at_least(j.model.blocks, 0))},
      {"model", "layers", DP_FIELD(model.layers), DP_RULE(at_least(j.model.layers, 1))},
      {"model", "heads", DP_FIELD(model.heads), check_heads},
      {"model", "width", DP_FIELD(model.width), DP_RULE(at_least(j.model.width, 1))},
      {"model", "context", DP_FIELD(model.context), DP_RULE(at_least(j.model.context, 1))},
      {"model", "tied_head", DP_FIELD(model.tied_head), nullptr},

      {"data", "dataset", DP_ENUM(data.dataset), nullptr},
      {"data", "path", DP_FIELD(data.path), nullptr},
      {"data", "train_samples", DP_FIELD(data.train_samples), DP_RULE(at_least(j.data.train_samples, 1))},
      {"data", "test_samples", DP_FIELD(data.test_samples), DP_RULE(at_least(j.data.test_samples, 1))},
      {"data", "features", DP_FIELD(data.features), DP_RULE(at_least(j.data.features, 1))},
      {"data", "classes", DP_FIELD(data.classes), DP_RULE(at_least(j.data.classes, 2))},
      {"data", "context", DP_FIELD(data.context), check_context},
      {"data", "val_fraction", DP_FIELD(data.val_fraction), check_val_fraction},

      {"optim", "name", DP_ENUM(optim.name), nullptr},
      {"optim", "lr", DP_FIELD(optim.lr), DP_RULE(positive(j.optim.lr))},
      {"optim", "momentum", DP_FIELD(optim.momentum), DP_RULE(unit_half_open(j.optim.momentum))},
      {"optim", "weight_decay", DP_FIELD(optim.weight_decay), DP_RULE(non_negative(j.optim.weight_decay))},
      {"optim", "beta1", DP_FIELD(optim.beta1), DP_RULE(unit_half_open(j.optim.beta1))},
      {"optim", "beta2", DP_FIELD(optim.beta2), DP_RULE(unit_half_open(j.optim.beta2))},
      {"optim", "eps", DP_FIELD(optim.eps), DP_RULE(positive(j.optim.eps))},
      {"optim", "schedule", DP_ENUM(optim.schedule), nullptr},
      {"optim", "warmup_steps", DP_FIELD(optim.warmup_steps), DP_RULE(at_least(j.optim.warmup_steps, 0))},
      {"optim", "step_size", DP_FIELD(optim.step_size), DP_RULE(at_least(j.optim.step_size, 1))},
      {"optim", "gamma", DP_FIELD(optim.gamma), DP_RULE(unit_open_closed(j.optim.gamma))},
      {"optim", "min_lr", DP_FIELD(optim.min_lr), check_min_lr},

      {"train", "epochs", DP_FIELD(train.epochs), DP_RULE(at_least(j.train.epochs, 1))},
      {"train", "steps", DP_FIELD(train.steps), DP_RULE(at_least(j.train.steps, 0))},
      {"train", "global_batch", DP_FIELD(train.global_batch), DP_RULE(at_least(j.train.global_batch, 1))},
      {"train", "eval_every", DP_FIELD(train.eval_every), DP_RULE(at_least(j.train.eval_every, 0))},
      {"train", "threads", DP_FIELD(train.threads), DP_RULE(at_least(j.train.threads, 0))},
      {"train", "device", DP_ENUM_FOLDED(train.device), nullptr},
      {"train", "precision", DP_ENUM(train.precision), nullptr},
      {"train", "on_nonfinite", DP_ENUM(train.on_nonfinite), nullptr},
      {"train", "micro_batch", DP_FIELD(train.micro_batch), check_train_micro_batch},
      {"train", "recompute", DP_ENUM(train.recompute), check_train_recompute},

      {"parallel", "strategy", DP_ENUM(parallel.strategy), nullptr},

      {"parallel.comm", "algorithm", DP_ENUM(parallel.comm.algorithm), nullptr},
      {"parallel.comm", "bucket_mb", DP_FIELD(parallel.comm.bucket_mb),
       DP_RULE(positive(j.parallel.comm.bucket_mb))},
      {"parallel.comm", "first_bucket_mb", DP_FIELD(parallel.comm.first_bucket_mb), check_first_bucket},
      {"parallel.comm", "overlap", DP_FIELD(parallel.comm.overlap), nullptr},
      {"parallel.comm", "overlap_forward", DP_FIELD(parallel.comm.overlap_forward), nullptr},
      {"parallel.comm", "sharded_update", DP_FIELD(parallel.comm.sharded_update), nullptr},

      {"parallel.balance", "mode", DP_ENUM(parallel.balance.mode), nullptr},
      {"parallel.balance", "every", DP_FIELD(parallel.balance.every),
       DP_RULE(at_least(j.parallel.balance.every, 1))},
      {"parallel.balance", "threshold", DP_FIELD(parallel.balance.threshold),
       DP_RULE(unit_half_open(j.parallel.balance.threshold))},
      {"parallel.balance", "speeds", DP_FIELD(parallel.balance.speeds), check_balance_speeds},
      {"parallel.balance", "max_share", DP_FIELD(parallel.balance.max_share), check_max_share},

      {"parallel.cgp", "solver", DP_ENUM(parallel.cgp.solver), nullptr},
      {"parallel.cgp", "group_count", DP_FIELD(parallel.cgp.group_count), check_group_count},
      {"parallel.cgp", "groups", DP_FIELD(parallel.cgp.groups), check_cgp_groups},
      {"parallel.cgp", "max_staleness", DP_FIELD(parallel.cgp.max_staleness),
       DP_RULE(at_least(j.parallel.cgp.max_staleness, 0))},
      {"parallel.cgp", "exchange_every", DP_FIELD(parallel.cgp.exchange_every),
       DP_RULE(at_least(j.parallel.cgp.exchange_every, 1))},
      {"parallel.cgp", "regroup_every", DP_FIELD(parallel.cgp.regroup_every),
       DP_RULE(at_least(j.parallel.cgp.regroup_every, 0))},
      {"parallel.cgp", "regroup_drift", DP_FIELD(parallel.cgp.regroup_drift),
       DP_RULE(positive(j.parallel.cgp.regroup_drift))},
      {"parallel.cgp", "regroup_gain", DP_FIELD(parallel.cgp.regroup_gain),
       DP_RULE(unit_half_open(j.parallel.cgp.regroup_gain))},
      {"parallel.cgp", "deterministic", DP_FIELD(parallel.cgp.deterministic), nullptr},
      {"parallel.cgp", "solver_seconds", DP_FIELD(parallel.cgp.solver_seconds),
       DP_RULE(positive(j.parallel.cgp.solver_seconds))},

      {"parallel.pipeline", "stages", DP_FIELD(parallel.pipeline.stages), nullptr},  // against the model
                                                                                           //   before ranks start
      {"parallel.pipeline", "micro_batches", DP_FIELD(parallel.pipeline.micro_batches), check_micro_batches},
      {"parallel.pipeline", "recompute", DP_ENUM(parallel.pipeline.recompute), nullptr},
      {"parallel.pipeline", "profile", DP_FIELD(parallel.pipeline.profile), nullptr},

      {"cluster", "file", DP_FIELD(cluster.file), nullptr},
      {"cluster", "speeds", DP_FIELD(cluster.speeds), check_cluster_speeds},
      {"cluster", "memory_gb", DP_FIELD(cluster.memory_gb), check_cluster_memory},
      {"cluster", "kinds", DP_FIELD(cluster.kinds), check_kinds},
      {"cluster", "kind_counts", DP_FIELD(cluster.kind_counts), check_kind_counts},
      {"cluster", "kind_speeds", DP_FIELD(cluster.kind_speeds), check_kind_speeds},
      {"cluster", "kind_memory_gb", DP_FIELD(cluster.kind_memory_gb), check_kind_memory},
      {"cluster", "ranks_per_node", DP_FIELD(cluster.ranks_per_node), check_ranks_per_node},
      {"cluster", "node_sizes", DP_FIELD(cluster.node_sizes), check_node_sizes},
      {"cluster", "nodes_per_rack", DP_FIELD(cluster.nodes_per_rack), check_nodes_per_rack},
      {"cluster", "sample_rate", DP_FIELD(cluster.sample_rate), DP_RULE(non_negative(j.cluster.sample_rate))},

      {"cluster.links", "node_gbps", DP_FIELD(cluster.links.node_gbps), DP_RULE(bandwidth(j.cluster.links.node_gbps)),
       warn_node_below_rack},
      {"cluster.links", "node_latency_us", DP_FIELD(cluster.links.node_latency_us),
       DP_RULE(non_negative(j.cluster.links.node_latency_us))},
      {"cluster.links", "rack_gbps", DP_FIELD(cluster.links.rack_gbps), DP_RULE(bandwidth(j.cluster.links.rack_gbps)),
       warn_rack_below_cross},
      {"cluster.links", "rack_latency_us", DP_FIELD(cluster.links.rack_latency_us),
       DP_RULE(non_negative(j.cluster.links.rack_latency_us))},
      {"cluster.links", "cross_gbps", DP_FIELD(cluster.links.cross_gbps),
       DP_RULE(bandwidth(j.cluster.links.cross_gbps))},
      {"cluster.links", "cross_latency_us", DP_FIELD(cluster.links.cross_latency_us),
       DP_RULE(non_negative(j.cluster.links.cross_latency_us))},
      {"cluster.links", "gbps", DP_FIELD(cluster.links.gbps), check_link_matrix},
      {"cluster.links", "latency_us", DP_FIELD(cluster.links.latency_us), check_latency_matrix},

      {"cluster.emulate", "slowdown", DP_FIELD(cluster.emulate.slowdown), check_slowdown},
      {"cluster.emulate", "fluctuate_rank", DP_FIELD(cluster.emulate.fluctuate_rank), check_fluctuate_rank,
       {}},
      {"cluster.emulate", "fluctuate_from", DP_FIELD(cluster.emulate.fluctuate_from),
       DP_RULE(at_least(j.cluster.emulate.fluctuate_from, 0))},
      {"cluster.emulate", "fluctuate_to", DP_FIELD(cluster.emulate.fluctuate_to), check_fluctuate_to},
      {"cluster.emulate", "fluctuate_factor", DP_FIELD(cluster.emulate.fluctuate_factor),
       DP_RULE(at_least_number(j.cluster.emulate.fluctuate_factor, 1))},
      {"cluster.emulate", "fluctuate_move_every", DP_FIELD(cluster.emulate.fluctuate_move_every),
       DP_RULE(at_least(j.cluster.emulate.fluctuate_move_every, 0))},
      {"cluster.emulate", "random_walk", DP_FIELD(cluster.emulate.random_walk),
       DP_RULE(non_negative(j.cluster.emulate.random_walk))},
      {"cluster.emulate", "link_gbps", DP_FIELD(cluster.emulate.link_gbps),
       DP_RULE(non_negative(j.cluster.emulate.link_gbps))},
      {"cluster.emulate", "link_latency_us", DP_FIELD(cluster.emulate.link_latency_us),
       DP_RULE(non_negative(j.cluster.emulate.link_latency_us))},
      {"cluster.emulate", "memory_gb", DP_FIELD(cluster.emulate.memory_gb), check_emulated_memory},
      {"cluster.emulate", "as_described", DP_FIELD(cluster.emulate.as_described), nullptr},

      {"launch", "ranks", DP_FIELD(launch.ranks), DP_RULE(rank_count(j.launch.ranks))},
      {"launch", "hosts", DP_FIELD(launch.hosts), check_hosts},
      {"launch", "mpirun_args", DP_FIELD(launch.mpirun_args), nullptr},
      {"launch", "mpirun", DP_FIELD(launch.mpirun), DP_RULE(not_empty(j.launch.mpirun))},
      {"launch", "hostfile", DP_FIELD(launch.hostfile), check_hostfile},
      {"launch", "launcher", DP_ENUM(launch.launcher), check_launcher},
      {"launch", "wait_timeout", DP_FIELD(launch.wait_timeout), DP_RULE(non_negative(j.launch.wait_timeout))},
      {"launch", "max_restarts", DP_FIELD(launch.max_restarts), DP_RULE(at_least(j.launch.max_restarts, 0))},

      {"checkpoint", "enabled", DP_FIELD(checkpoint.enabled), nullptr},
      {"checkpoint", "every", DP_FIELD(checkpoint.every), DP_RULE(at_least(j.checkpoint.every, 0))},
      {"checkpoint", "keep", DP_FIELD(checkpoint.keep), DP_RULE(at_least(j.checkpoint.keep, 1))},

      {"log", "every", DP_FIELD(log.every), DP_RULE(at_least(j.log.every, 1))},
      {"log", "progress", DP_ENUM(log.progress), nullptr},
      {"log", "trace", DP_FIELD(log.trace), nullptr},
      {"log", "trace_first", DP_FIELD(log.trace_first), DP_RULE(at_least(j.log.trace_first, 1))},
      {"log", "trace_steps", DP_FIELD(log.trace_steps), DP_RULE(at_least(j.log.trace_steps, 1))},
  };
  return keys;
}
// clang-format on

#undef DP_FIELD
#undef DP_ENUM
#undef DP_ENUM_FOLDED
#undef DP_RULE

}  // namespace dp::job_detail
