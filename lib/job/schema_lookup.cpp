// Lookups over the job schema (schema.cpp): tables as dotted paths and their nesting, keys by table and
// name or by full dotted name, and the enumerations' names.
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

bool EnumRef::assign(std::string_view text) const {
  const std::string folded = fold_case ? lowercase(text) : std::string(text);
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == folded) {
      set(field, static_cast<int>(i));
      return true;
    }
  return false;
}

std::optional<Problem> check_enum_name(const KeySpec& key, std::string_view text) {
  Job probe;  // field() wants a Job; only the enumeration's names are read
  const FieldRef ref = key.field(probe);
  const EnumRef* e = std::get_if<EnumRef>(&ref);
  if (!e || e->assign(text)) return std::nullopt;
  const std::string value = e->fold_case ? lowercase(text) : std::string(text);
  const std::vector<std::string> choices(e->names.begin(), e->names.end());
  std::string hint;
  if (std::string near = closest(value, choices); !near.empty()) hint = "did you mean '" + near + "'? ";
  hint += "valid values: " + join(choices);
  return Problem{"unknown value '" + value + "'", -1, hint};
}

}  // namespace dp::job_detail
