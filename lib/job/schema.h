// The job file's schema, shared by parsing, --set overrides and emission: every table, every key with its
// C++ field (for enumerations, the enum with its names) and its range check. Tables nest: a key's table is a
// dotted path ("parallel.comm" is the [parallel.comm] table inside [parallel]).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "lib/job/job.h"

namespace dp::job_detail {

// An enumerated key's Job field, its enum type erased: a TOML string naming one of `names`, stored as the
// enum value of that index (lib/job/job_enums.h).
struct EnumRef {
  void* field;
  std::span<const std::string_view> names;
  int (*get)(const void* field);
  void (*set)(void* field, int index);
  bool fold_case;  // names match whatever their case ("CUDA" is "cuda")

  std::string name() const { return std::string(names[static_cast<std::size_t>(get(field))]); }
  // Sets the value `text` names (folded to lower case when fold_case); false when it names none.
  bool assign(std::string_view text) const;
};

template <class E>
EnumRef enum_ref(E* field, bool fold_case = false) {
  return {field, names_of<E>(), [](const void* f) { return static_cast<int>(*static_cast<const E*>(f)); },
          [](void* f, int index) { *static_cast<E*>(f) = static_cast<E>(index); }, fold_case};
}

// A pointer to the Job field a key fills; the alternative tells the key's TOML type (a vector: an array,
// whose number elements, like number keys, accept integers; an EnumRef: a string naming a value).
using FieldRef = std::variant<int64_t*, uint64_t*, double*, std::string*, bool*, std::vector<int64_t>*,
                              std::vector<double>*, std::vector<std::string>*, EnumRef>;

// A value out of range. `index` >= 0 names the offending array element. A cross-key check names the
// other key (`other`, dotted): when the checked key was left at its default, the error points there.
struct Problem {
  explicit Problem(std::string w, int i = -1, std::string h = {}, std::string o = {})
      : what(std::move(w)), index(i), hint(std::move(h)), other(std::move(o)) {}
  std::string what;  // e.g. "must be at least 1, got 0"
  int index;
  std::string hint;
  std::string other;
};

struct KeySpec {
  std::string table;  // "train"; a nested table is a dotted path, "parallel.comm"
  std::string name;   // "global_batch"; never contains a dot
  FieldRef (*field)(Job&);
  std::optional<Problem> (*check)(const Job&);  // nullptr: any value of the right type (an enumeration's: named)
  // A value that is valid but doubtful (Job::warnings): the Problem is reported like check's, as a warning.
  std::optional<Problem> (*warn)(const Job&) = nullptr;

  std::string dotted() const { return table + "." + name; }
};

// Every key, in man-page order ([job] first; a nested table right after its parent's keys).
const std::vector<KeySpec>& schema();
// Every table name (dotted paths, each after its parent), in order: those holding keys and their parents.
const std::vector<std::string>& table_names();
// Whether `table` (a dotted path) is a table of the schema.
bool is_table(std::string_view table);
// The tables directly inside `parent` ("" for the top level), full dotted paths, in order.
std::vector<std::string> sub_tables(std::string_view parent);
// "parallel" for "parallel.comm", "" for a top-level table; and the last component, "comm".
std::string_view parent_table(std::string_view table);
std::string_view leaf_name(std::string_view table);
// The key names of one table, in order (empty when no such table or it holds only tables).
std::vector<std::string> key_names(std::string_view table);
// The first key at or below `table` ("parallel.strategy" for "parallel"), dotted; empty when none.
std::string first_key_below(std::string_view table);
// nullptr when unknown.
const KeySpec* find_key(std::string_view table, std::string_view name);
// The key by its full dotted name ("parallel.comm.algorithm": table "parallel.comm", name "algorithm").
const KeySpec* find_dotted(std::string_view dotted);

// An enumerated key's problem with the text a job gives it: nullopt when it names a value, else "unknown
// value" with a did-you-mean and the valid values. Not an enumerated key: nullopt.
std::optional<Problem> check_enum_name(const KeySpec& key, std::string_view text);

// Shortest text that reads back as v ("0.001", "1e-08").
std::string number_text(double v);

}  // namespace dp::job_detail
