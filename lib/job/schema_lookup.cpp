// Lookups over the job schema (schema.cpp): tables as dotted paths and their nesting, keys by table and
// name or by full dotted name, and the per-key value check (enumerations, then the range rule).
#include <algorithm>

#include "lib/job/schema.h"
#include "lib/job/suggest.h"

namespace dp::job_detail {

std::string_view parent_table(std::string_view table) {
  const auto dot = table.rfind('.');
  return dot == std::string_view::npos ? std::string_view() : table.substr(0, dot);
}

std::string_view leaf_name(std::string_view table) {
  const auto dot = table.rfind('.');
  return dot == std::string_view::npos ? table : table.substr(dot + 1);
}

const std::vector<std::string>& table_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    auto add = [&](const std::string& t) {
      if (std::find(n.begin(), n.end(), t) == n.end()) n.push_back(t);
    };
    for (const auto& k : schema()) {
      // Parents first: "parallel" before "parallel.comm", even when the parent holds no keys of its own.
      for (auto dot = k.table.find('.'); dot != std::string::npos; dot = k.table.find('.', dot + 1))
        add(k.table.substr(0, dot));
      add(k.table);
    }
    return n;
  }();
  return names;
}

bool is_table(std::string_view table) {
  const auto& t = table_names();
  return std::find(t.begin(), t.end(), table) != t.end();
}

std::vector<std::string> sub_tables(std::string_view parent) {
  std::vector<std::string> n;
  for (const auto& t : table_names())
    if (parent_table(t) == parent) n.push_back(t);
  return n;
}

std::vector<std::string> key_names(std::string_view table) {
  std::vector<std::string> n;
  for (const auto& k : schema())
    if (k.table == table) n.push_back(k.name);
  return n;
}

std::string first_key_below(std::string_view table) {
  for (const auto& k : schema()) {
    const std::string_view t = k.table;
    if (t == table || (t.size() > table.size() && t.starts_with(table) && t[table.size()] == '.'))
      return k.dotted();
  }
  return {};
}

const KeySpec* find_key(std::string_view table, std::string_view name) {
  for (const auto& k : schema())
    if (k.table == table && k.name == name) return &k;
  return nullptr;
}

const KeySpec* find_dotted(std::string_view dotted) {
  const auto dot = dotted.rfind('.');
  if (dot == std::string_view::npos) return nullptr;
  return find_key(dotted.substr(0, dot), dotted.substr(dot + 1));
}

std::optional<Problem> check_key(const KeySpec& key, const Job& job) {
  if (!key.choices.empty()) {
    Job copy = job;  // field() wants a mutable Job; enumerations are strings
    const std::string& v = *std::get<std::string*>(key.field(copy));
    if (std::find(key.choices.begin(), key.choices.end(), v) == key.choices.end()) {
      std::string hint;
      if (std::string near = closest(v, key.choices); !near.empty()) hint = "did you mean '" + near + "'? ";
      hint += "valid values: " + join(key.choices);
      return Problem{"unknown value '" + v + "'", -1, hint};
    }
  }
  return key.check ? key.check(job) : std::nullopt;
}

}  // namespace dp::job_detail
