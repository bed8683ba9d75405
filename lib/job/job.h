// A training job as plain structs: what a TOML job file (man dptrain-job(5)) says after parsing, defaults
// filled in and every value validated. Parsing happens only here (load_job / parse_job); the rest of
// dptrain reads these structs and never sees TOML.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lib/job/job_enums.h"

namespace dp {

struct JobSection {
  std::string name = "job";
  uint64_t seed = 1;
  std::string output_dir;  // empty: runs/<name>
};

struct ModelSection {
  ModelType type = ModelType::mlp;
  // mlp
  std::vector<int64_t> hidden = {256, 128};  // hidden layer widths (ReLU between layers)
  // cnn: a stem convolution, then one stage per entry of `channels` (each after the first halves the
  // resolution), each with `blocks` residual blocks (conv3x3-norm-ReLU-conv3x3-norm + skip, ReLU);
  // global average pooling and a linear classifier.
  std::vector<int64_t> channels = {16, 32};
  int64_t blocks = 1;
  // gpt: decoder-only transformer
  int64_t layers = 4;      // transformer blocks
  int64_t heads = 4;       // attention heads (must divide width)
  int64_t width = 128;     // embedding width C
  int64_t context = 128;   // position table size: the longest sequence the model accepts
  bool tied_head = true;   // the LM head reuses the token embedding
};

struct DataSection {
  DatasetKind dataset = DatasetKind::fashion_mnist;
  // fashion-mnist: folder of the gzip IDX files; text: a UTF-8 file (gzip or plain); empty: the
  // Debian package's (dataset-fashion-mnist, jargon-text)
  std::string path;
  // text: characters per sample (targets are the next characters) and the held-out share
  int64_t context = 128;
  double val_fraction = 0.1;
  // synthetic: Gaussian clusters, deterministic from [job] seed
  int64_t train_samples = 4096;
  int64_t test_samples = 1024;
  int64_t features = 32;
  int64_t classes = 10;
};

struct OptimSection {
  OptimizerKind name = OptimizerKind::adamw;
  double lr = 1e-3;
  double momentum = 0.9;       // sgd
  double weight_decay = 0.0;   // sgd: L2 added to the gradient; adamw: decoupled
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // adamw
  LrSchedule schedule = LrSchedule::constant;
  int64_t warmup_steps = 0;    // linear warmup from 0 to lr
  int64_t step_size = 1000;    // step: multiply by gamma every step_size steps
  double gamma = 0.1;          // step
  double min_lr = 0.0;         // cosine: floor
};

struct TrainSection {
  int64_t epochs = 1;
  int64_t steps = 0;           // > 0: stop after this many steps in total (overrides epochs)
  int64_t global_batch = 128;  // samples per step, summed over all ranks
  int64_t eval_every = 0;      // steps between test-set evaluations; 0: at the end of every epoch
  int64_t threads = 0;         // compute threads per rank; 0: cores on the host / ranks on the host
  DeviceRequest device = DeviceRequest::automatic;  // auto: a GPU when usable, else the CPU (says which)
  Precision precision = Precision::fp32;            // bf16: GPU only, GEMMs on bf16 tensor cores
  OnNonfinite on_nonfinite = OnNonfinite::stop;     // a step whose loss is not finite: stop the run | skip it
  // Memory levers of a data-parallel replica (strategies data and cgp; a pipeline has its own):
  int64_t micro_batch = 0;  // samples a rank runs through the model at once (its share in parts, gradients
                            //   accumulated; evaluation in parts too); 0: its whole share
  TrainRecompute recompute = TrainRecompute::none;  // all: every block keeps only its input, rebuilds the rest
};

// [parallel.comm]: how gradients travel between data-parallel ranks.
struct CommSection {
  // "native": after backward, gradients summed layer by layer with the transport's own allreduce
  //   (MPI_Allreduce); every rank applies the full optimizer update.
  // "ring": the same with dptrain's ring allreduce.
  // "mra": fused ring-allreduce: gradients packed into buckets in the order backward produces them, each
  //   bucket reduce-scattered as soon as it is complete, each rank updating only its shard of the
  //   parameters, then the updated parameters all-gathered.
  CommAlgorithm algorithm = CommAlgorithm::mra;
  double bucket_mb = 25.0;       // bucket size in MB (1e6 bytes) of fp32 gradients
  double first_bucket_mb = 1.0;  // the first bucket (the last layers): smaller, so communication starts early
  bool overlap = true;           // mra: reduce-scatter buckets while backward still runs
  bool overlap_forward = false;  // mra with overlap: all-gather updated parameters into the next forward
  bool sharded_update = true;    // mra: optimizer state sharded across ranks too
};

// [parallel.balance]: how the global batch is divided among the ranks (I-DAT, lib/balance).
struct BalanceSection {
  BalanceMode mode = BalanceMode::equal;  // equal: as evenly as possible; idat: in proportion to measured speeds
  int64_t every = 1;           // idat: steps between division decisions
  double threshold = 0.03;     // idat: adopt a new division only if the predicted step time drops by this
  std::vector<double> speeds;  // idat: relative speed per rank for the first division (empty: equal)
  int64_t max_share = 0;       // samples one rank may take per step (memory limit); 0: no limit
};

// [parallel.cgp]: cooperative grouping (lib/cgp): synchronous data parallelism inside groups of ranks,
// asynchronous exchange through a global model between groups.
struct CgpSection {
  CgpSolver solver = CgpSolver::aga;  // who chooses the groups
  int64_t group_count = 0;       // groups the solver must form; 0: it chooses how many
  std::vector<int64_t> groups;   // a fixed grouping: the group (0, 1, ...) of every rank; empty: the solver's
  int64_t max_staleness = 4;     // other groups' updates that may land between a group's read and its write
  int64_t exchange_every = 1;    // local steps of a group between two exchanges with the global model
  int64_t regroup_every = 0;     // steps between regrouping decisions on measured speeds; 0: never
  double regroup_drift = 0.25;   // also regroup when a rank's measured speed drifts this much (relative)
  double regroup_gain = 0.05;    // adopt a new grouping only if predicted this much faster
  bool deterministic = false;    // exchanges applied in a fixed round-robin order (reproducible runs)
  double solver_seconds = 1.0;   // aga, pls: time limit of one solve
};

// [parallel.pipeline]: pipeline parallelism (lib/pipeline plans it, lib/train runs it): the model's
// blocks cut into stages, each on one rank or replicated over several (data parallel inside the stage),
// micro-batches in 1F1B order with a flush per mini-batch.
struct PipelineSection {
  std::string stages;         // "0-2,3-5x2" (block ranges, "xR": R replicas, ranks in order) or
                              //   "0-2@0,3-5@1+2" (each stage's ranks); empty: the planner's on [cluster]
  int64_t micro_batches = 0;  // M, dividing train.global_batch; 0: the planner's choice
  Recompute recompute = Recompute::automatic;  // auto: per stage, the cheapest blocks that fit [cluster]
                                               //   memory; none; all: every block keeps only its input
  std::string profile;        // a layer profile (dptrain profile --layers) or PipeDream graph.txt the plan
                              //   is made from; empty: the blocks are timed when the run starts
};

struct ParallelSection {
  // "data": data parallelism, gradients averaged after backward; "cgp": cooperative grouping;
  // "pipeline": pipeline parallelism
  StrategyKind strategy = StrategyKind::data;
  CommSection comm;               // [parallel.comm]
  BalanceSection balance;         // [parallel.balance]
  CgpSection cgp;                 // [parallel.cgp]
  PipelineSection pipeline;       // [parallel.pipeline]
};

// [cluster.emulate]: heterogeneity on purpose, to test balancing on one machine. A rank slowed by factor
// f sleeps (f - 1) x its measured compute time after computing, so it does not take cores from others.
// Emulated links sleep too, so ranks on one machine communicate as if over a network.
struct EmulateSection {
  std::vector<double> slowdown;  // compute-time factor per rank (>= 1); empty: none
  int64_t fluctuate_rank = -1;   // this rank (0-based; -1: none) is slowed by fluctuate_factor (on top
  int64_t fluctuate_from = 0;    //   of its slowdown) during the steps [fluctuate_from, fluctuate_to),
  int64_t fluctuate_to = 0;      //   counted from 0
  double fluctuate_factor = 1.0;
  int64_t fluctuate_move_every = 0;  // > 0: every this many steps of the window the slowness passes to the
                                     //   next rank (rank + 1, wrapping around); 0: it stays
  double random_walk = 0.0;      // per-step standard deviation of every rank's log slowdown (a seeded
                                 // random walk, factors kept >= 1); 0: off
  double link_gbps = 0.0;        // every rank's network link, in Gbit/s each way (lib/comm/emulated_links.h):
  double link_latency_us = 0.0;  //   transfers take at least bytes / bandwidth + latency; 0, 0: off
  // Device memory per rank in GB (1e9 bytes): one value for every rank, or one per rank; every buffer
  // the rank's memory meter counts is held to it (an allocation past it fails as a GPU's would). Empty:
  // none (with as_described: [cluster]'s memory where it gives one)
  std::vector<double> memory_gb;
  // true: emulate the cluster described in [cluster]: every rank slowed to its speed relative to the
  // fastest (on top of slowdown), held to its memory, every pair of ranks linked as [cluster.links] says
  bool as_described = false;
};

// [cluster.links]: bandwidth (Gbit/s each way) and one-way latency between two ranks, by level: the same
// node, the same rack, across racks; or a full matrix (row-major, ranks x ranks, diagonal ignored).
struct LinksSection {
  double node_gbps = 100.0, node_latency_us = 1.0;
  double rack_gbps = 10.0, rack_latency_us = 10.0;
  double cross_gbps = 10.0, cross_latency_us = 20.0;
  std::vector<double> gbps;        // matrix: overrides the levels when given
  std::vector<double> latency_us;  // matrix (optional with gbps; empty: the levels' latencies)
};

// [cluster]: the machines the job runs on (lib/cluster), for `plan` and the emulator: each rank's
// relative speed and memory, given per rank or per device kind with counts, ranks grouped into nodes and
// nodes into racks, and the links between them.
struct ClusterSection {
  std::string file;                 // a cluster file whose [cluster] keys apply unless set here (in the job
                                    //   file: relative to its folder; by --set: to the current directory)
  std::vector<double> speeds;       // relative speed per rank; empty: from the kinds, or all 1
  std::vector<double> memory_gb;    // memory per rank (> 0); empty: from the kinds, or unknown (0)
  std::vector<std::string> kinds;   // device kinds, ranks taking them in order by kind_counts
  std::vector<int64_t> kind_counts;
  std::vector<double> kind_speeds;
  std::vector<double> kind_memory_gb;
  int64_t ranks_per_node = 0;       // 0: every rank on one node (unless node_sizes); else divides the ranks
  std::vector<int64_t> node_sizes;  // ranks of each node in rank order (instead of ranks_per_node)
  int64_t nodes_per_rack = 0;       // 0: every node in one rack; else at most the nodes
  double sample_rate = 0;           // training samples/s of a speed-1 rank on the job's model; 0: `plan`
                                    //   times the model on this machine
  LinksSection links;               // [cluster.links]
  EmulateSection emulate;           // [cluster.emulate]
};

struct LaunchSection {
  int64_t ranks = 1;
  std::vector<std::string> hosts;        // mpirun --host entries ("node1:4"); empty: this machine
  std::vector<std::string> mpirun_args;  // appended verbatim
  std::string mpirun = "mpirun";
  std::string hostfile;                  // mpirun --hostfile; resolved against the job file's folder
  Launcher launcher = Launcher::automatic;  // auto: srun inside a Slurm allocation, else mpirun
  double wait_timeout = 300;             // seconds without progress on any rank before the job ends (0: never)
  int64_t max_restarts = 0;              // relaunches after a rank's or machine's death or a wait timeout
  bool ranks_given = false;              // not a key: whether the job (or --set) says ranks
};

struct CheckpointSection {
  bool enabled = true;
  int64_t every = 0;  // steps between checkpoints; 0: at the end of every epoch (and of the run)
  int64_t keep = 2;   // newest checkpoints kept; older ones are deleted
};

struct LogSection {
  int64_t every = 10;             // steps between metrics.jsonl lines (and plain progress lines)
  ProgressMode progress = ProgressMode::automatic;  // auto: a bar on a terminal, plain lines otherwise
  bool trace = true;              // write trace.json (lib/core/trace.h) over the steps below
  int64_t trace_first = 2;        // first traced step of the invocation (1-based; before it: warm-up)
  int64_t trace_steps = 10;       // steps traced from trace_first
};

// Something a job says that is valid but most likely not meant (links inside a node slower than between
// nodes): the command that loads the job shows it once, before it starts (the ranks do not repeat it).
struct JobWarning {
  std::string where;  // "FILE:LINE:COL" or "--set KEY=VALUE", as a JobError's
  std::string what;
  std::string hint;
  // One line: "WHERE: warning: WHAT (hint: HINT)".
  std::string line() const;
};

struct Job {
  JobSection job;
  ModelSection model;
  DataSection data;
  OptimSection optim;
  TrainSection train;
  ParallelSection parallel;
  ClusterSection cluster;
  LaunchSection launch;
  CheckpointSection checkpoint;
  LogSection log;
  std::string source;  // the job file's path, for messages
  std::vector<JobWarning> warnings;  // in the order of the keys; not part of the job's text (job_to_toml)

  // [job] output_dir, or runs/<name> when unset.
  std::string output_dir() const { return job.output_dir.empty() ? "runs/" + job.name : job.output_dir; }
};

// Reads and validates a job file, then applies "--set dotted.key=value" overrides (validated the same way;
// --set cluster.file=FILE reads FILE, relative to the current directory, like the key in the file).
// `cluster_file` (plan --cluster): a cluster file whose [cluster] replaces the job's (but for
// [cluster.emulate]). Throws JobError whose where() is "FILE:LINE:COL" (or "--set KEY=VALUE"); what is
// valid but doubtful is in Job::warnings.
Job load_job(const std::string& path, const std::vector<std::string>& overrides = {},
             const std::string& cluster_file = {});
// Same, from text in memory; `source_name` is used in messages.
Job parse_job(std::string_view text, const std::string& source_name,
              const std::vector<std::string>& overrides = {}, const std::string& cluster_file = {});

// The resolved job (every key, defaults included; a cluster file's keys in [cluster] and cluster.file "")
// as JSON text and as TOML text.
std::string job_to_json(const Job& job);
std::string job_to_toml(const Job& job);

}  // namespace dp
