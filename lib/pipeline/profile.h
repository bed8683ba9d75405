// Per-block profiles the pipeline planner reads: for each block of a model, in the order it runs, its
// forward and backward time and its parameter bytes, and for each boundary between two blocks the
// bytes that cross it (the activations sent forward, and their gradients back, when a stage ends there).
//
// Read from PipeDream's published profile format (`graph.txt`, its profiler's output): one node a line,
//   <id> -- <description> -- forward_compute_time=<ms>, backward_compute_time=<ms>,
//   activation_size=<bytes>, parameter_size=<bytes>
// (an activation_size may be a list, "[a; b; c]", for a tuple output: the sum counts), edges on lines
// that start with a tab, "\t<from> -- <to>"; times in milliseconds per minibatch, sizes in bytes of the
// whole minibatch; nodes in any order. A graph that is not a chain (ResNet's skips, GNMT's layers) is
// linearised: blocks in a topological order (ties by node number), and the boundary after block i
// carries every output of the blocks up to i that a block after i reads. Input nodes ("Input...": data
// sources, no compute) are not blocks; their outputs cross the boundaries up to their first reader.
//
// Pure: reads a file, throws InputError ("FILE:LINE: ...") for bad input.
#pragma once

#include <string>
#include <vector>

namespace dp::pipeline {

struct ProfiledBlock {
  std::string id;           // "node12"
  std::string description;  // "Conv2d(64, 192, kernel_size=(5, 5), ...)"
  double forward_ms = 0, backward_ms = 0;  // per minibatch, as profiled
  double output_bytes = 0;                 // of the whole minibatch
  double param_bytes = 0;
};

struct LayerProfile {
  std::string path;
  std::vector<ProfiledBlock> blocks;   // in running order
  std::vector<double> boundary_bytes;  // blocks.size() - 1 entries: bytes crossing after block i
  double input_bytes = 0;              // the input nodes' outputs that blocks read (the data)
  bool chain = true;                   // every boundary carries exactly the previous block's output
};

// dptrain's own layer profile (`dptrain profile --layers --out FILE`; man dptrain(1), LAYER PROFILES): a
// TOML file with a [profile] table (model, device, micro_batch: the samples the times are for,
// input_bytes per sample) and one [[block]] table per block in running order: name, forward_ms and
// backward_ms per micro-batch, and per sample output_bytes (what crosses the boundary after it),
// saved_bytes (what its backward keeps: its input and more), work_bytes (transient), and param_bytes;
// optionally forward_fixed_ms and backward_fixed_ms, the part of the times a micro-batch of any size
// pays (at most the times; a block of n samples takes fixed + n / micro_batch x (time - fixed)),
// update_ms, the optimizer's update of its parameters (once per mini-batch), and
// shares_weights_with = the index of a block whose parameters it also uses (a tied head).
struct BlockRow {
  std::string name;
  double forward_ms = 0, backward_ms = 0;
  double forward_fixed_ms = 0, backward_fixed_ms = 0;
  double update_ms = 0;  // the optimizer's update of its parameters (once per mini-batch)
  double output_bytes = 0, saved_bytes = 0, work_bytes = 0, param_bytes = 0;
  int shares_weights_with = -1;  // a block whose parameters it also uses (a tied LM head: the embedding)
};
struct BlockProfile {
  std::string model, device;
  int64_t micro_batch = 1;
  double input_bytes = 0;
  // A whole replica's step besides its blocks' times, per micro-batch, and the part of it any micro-batch
  // pays (the batch gathered and staged, the gradients zeroed, the loss: what a data-parallel or CGP rank
  // computes beyond the blocks, measured as a whole step's time less the blocks'; 0: not measured).
  double step_extra_ms = 0, step_extra_fixed_ms = 0;
  // For a job that emulates slow devices ([cluster.emulate]): the factor of the emulated ranks the times
  // were scaled to (a whole step timed with a sleep of factor - 1 times it after each, as the emulator
  // rests) and the ratio of that step to one timed back to back at micro_batch samples, which scaled
  // them (1 and 1: the times as timed back to back).
  double timed_resting = 1, rest_scale = 1;
  std::vector<BlockRow> blocks;
  // The device the times are for, as a prediction names its basis: "cpu", or "cpu, x1.1 for ranks
  // emulated at 12x".
  std::string timed_on() const;
};
void write_block_profile(const std::string& path, const BlockProfile& p);
// Throws ProfileError "FILE:LINE:COL" for bad TOML, a missing, negative, non-numeric or non-finite field,
// a micro_batch that is not a whole number from 1 to 2^31, or no blocks.
BlockProfile read_block_profile(const std::string& path);
// Whether `path` holds dptrain's format (a [profile] table) rather than PipeDream's graph.txt.
bool is_block_profile(const std::string& path);

// Reads a PipeDream graph.txt. Throws InputError naming FILE:LINE for a line that is neither a node nor
// an edge, a node without one of the four fields or with a negative or non-numeric one, a node defined
// twice, an edge to or from an unknown node, a cycle, or a graph without blocks.
LayerProfile read_pipedream_graph(const std::string& path);

}  // namespace dp::pipeline
