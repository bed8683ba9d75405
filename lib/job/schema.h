// The job file's schema, shared by parsing, --set overrides and emission: every table, every key with its
// C++ field, its range check and (for enumerations) its valid values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "lib/job/job.h"

namespace dp::job_detail {

// A pointer to the Job field a key fills; the alternative tells the key's TOML type.
using FieldRef = std::variant<int64_t*, uint64_t*, double*, std::string*, bool*, std::vector<int64_t>*,
                              std::vector<std::string>*>;

// A value out of range. `index` >= 0 names the offending array element.
struct Problem {
  explicit Problem(std::string w, int i = -1, std::string h = {})
      : what(std::move(w)), index(i), hint(std::move(h)) {}
  std::string what;  // e.g. "must be at least 1, got 0"
  int index;
  std::string hint;
};

struct KeySpec {
  std::string table;  // "train"
  std::string name;   // "global_batch"
  FieldRef (*field)(Job&);
  std::optional<Problem> (*check)(const Job&);  // nullptr: any value of the right type
  std::vector<std::string> choices;             // enumerations: the valid values; else empty

  std::string dotted() const { return table + "." + name; }
};

// Every key, in man-page order ([job] first).
const std::vector<KeySpec>& schema();
// The table names, in order.
const std::vector<std::string>& table_names();
// The key names of one table, in order (empty when no such table).
std::vector<std::string> key_names(std::string_view table);
// nullptr when unknown.
const KeySpec* find_key(std::string_view table, std::string_view name);

// The key's range/enumeration check on a fully read Job; nullopt when the value is fine.
std::optional<Problem> check_key(const KeySpec& key, const Job& job);

// Shortest text that reads back as v ("0.001", "1e-08").
std::string number_text(double v);

}  // namespace dp::job_detail
