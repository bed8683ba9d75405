// The job's enumerated settings as enums, each with the names a job file spells its values with (in the
// enum's order). lib/job turns the names into enums once, when it reads a job (schema.cpp); the rest of
// dptrain compares enums and prints name_of(value). A new value: its enumerator and its name here, and its
// line in man/dptrain-job.5 and the completions (tests/cli/docs_in_step.sh checks them).
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace dp {

enum class ModelType { mlp, cnn, gpt };
enum class DatasetKind { fashion_mnist, synthetic, text };
enum class OptimizerKind { sgd, adamw };
enum class LrSchedule { constant, step, cosine };
enum class DeviceRequest { automatic, cpu, cuda };  // automatic: a GPU when usable, else the CPU
enum class Precision { fp32, bf16 };
enum class OnNonfinite { stop, skip };
// Their runtimes: lib/train/registry.cpp. automatic ("auto"): the launcher picks one (plan --compare's
// winner) before ranks start; ranks only ever see the three.
enum class StrategyKind { data, cgp, pipeline, cgp_pipeline, automatic };
enum class CommAlgorithm { native, ring, mra };
enum class BalanceMode { equal, idat };
enum class CgpSolver { aga, pls, exhaustive, sorted };
enum class Recompute { automatic, none, all };
enum class TrainRecompute { none, all };  // [train] recompute: no planner to choose blocks, so no auto
enum class Launcher { automatic, mpirun, srun };
enum class ProgressMode { automatic, bar, plain, none };

// EnumNames<E>::names: the job file's spelling of each value of E, indexed by the value.
template <class E>
struct EnumNames;

#define DP_ENUM_NAMES(E, ...)                                   \
  template <>                                                   \
  struct EnumNames<E> {                                         \
    static constexpr std::string_view names[] = {__VA_ARGS__};  \
  }
DP_ENUM_NAMES(ModelType, "mlp", "cnn", "gpt");
DP_ENUM_NAMES(DatasetKind, "fashion-mnist", "synthetic", "text");
DP_ENUM_NAMES(OptimizerKind, "sgd", "adamw");
DP_ENUM_NAMES(LrSchedule, "constant", "step", "cosine");
DP_ENUM_NAMES(DeviceRequest, "auto", "cpu", "cuda");
DP_ENUM_NAMES(Precision, "fp32", "bf16");
DP_ENUM_NAMES(OnNonfinite, "stop", "skip");
DP_ENUM_NAMES(StrategyKind, "data", "cgp", "pipeline", "cgp-pipeline", "auto");
DP_ENUM_NAMES(CommAlgorithm, "native", "ring", "mra");
DP_ENUM_NAMES(BalanceMode, "equal", "idat");
DP_ENUM_NAMES(CgpSolver, "aga", "pls", "exhaustive", "sorted");
DP_ENUM_NAMES(Recompute, "auto", "none", "all");
DP_ENUM_NAMES(TrainRecompute, "none", "all");
DP_ENUM_NAMES(Launcher, "auto", "mpirun", "srun");
DP_ENUM_NAMES(ProgressMode, "auto", "bar", "plain", "none");
#undef DP_ENUM_NAMES

// Every name of E, in order.
template <class E>
constexpr std::span<const std::string_view> names_of() {
  return EnumNames<E>::names;
}

// "pipeline" for StrategyKind::pipeline.
template <class E>
std::string name_of(E value) {
  return std::string(EnumNames<E>::names[static_cast<std::size_t>(value)]);
}

// The value a name spells; nullopt when it spells none (the job reader reports it with a did-you-mean).
template <class E>
constexpr std::optional<E> enum_named(std::string_view name) {
  const auto names = names_of<E>();
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<E>(i);
  return std::nullopt;
}

}  // namespace dp
