// "--set dotted.key=value" overrides: split, check the key (the last dotted component; the table, nested
// or not, is what precedes it), read the value as TOML (or, failing that, as a plain string) and put it
// into the parsed document, where it is validated like a value from the file.
#include <fmt/format.h>

#include "lib/core/error.h"
#include "lib/job/job_internal.h"
#include "lib/job/schema.h"
#include "lib/job/suggest.h"

namespace dp::job_detail {

namespace {

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t");
  return std::string(s.substr(b, e - b + 1));
}

std::vector<std::string> dotted_keys() {
  std::vector<std::string> all;
  for (const auto& k : schema()) all.push_back(k.dotted());
  return all;
}

// The key of an override, checked against the schema: the table is everything before the last dot
// ("parallel.comm" in parallel.comm.algorithm), the key the last component.
const KeySpec& override_key(const std::string& key, const std::string& where) {
  if (const KeySpec* spec = find_dotted(key)) return *spec;

  const auto dot = key.rfind('.');
  const std::string table = dot == std::string::npos ? std::string() : key.substr(0, dot);
  const std::string name = dot == std::string::npos ? key : key.substr(dot + 1);
  std::string hint;
  if (is_table(key)) {
    hint = fmt::format("name a key of [{}]: {}=VALUE", key, first_key_below(key));
  } else if (is_table(table)) {  // a known table: the key is judged among that table's keys
    if (std::string near = closest(name, key_names(table)); !near.empty())
      hint = fmt::format("did you mean '{}.{}'?", table, near);
    else
      hint = unknown_key_hint(table, name);
  } else if (std::string near = closest(key, dotted_keys()); !near.empty()) {
    hint = "did you mean '" + near + "'?";
  } else if (dot == std::string::npos) {
    hint = "keys are written TABLE.KEY, e.g. train.epochs";
    for (const auto& k : schema())
      if (k.name == key) hint = fmt::format("did you mean '{}'?", k.dotted());
  } else {
    hint = unknown_table_hint(table);
  }
  throw JobError(where, fmt::format("unknown key '{}'", key), hint);
}

// The override's value as a TOML node (under key "v"). Text that is not a single TOML value is taken as
// a string; so is a non-string value for a key that wants a string, so that `job.name=2024` works.
toml::table value_of(const std::string& raw, const KeySpec& key) {
  Job probe;
  const FieldRef field = key.field(probe);
  const bool wants_string = std::holds_alternative<std::string*>(field) || std::holds_alternative<EnumRef>(field);
  try {
    toml::table parsed = toml::parse("v = " + raw);
    const toml::node* v = parsed.get("v");
    if (parsed.size() == 1 && v && (!wants_string || v->is_string())) return parsed;
  } catch (const toml::parse_error&) {
  }
  toml::table holder;
  holder.insert("v", raw);
  return holder;
}

}  // namespace

void apply_overrides(toml::table& doc, const std::vector<std::string>& overrides, Origins& origins) {
  for (const auto& ov : overrides) {
    const std::string where = "--set " + ov;
    const auto eq = ov.find('=');
    if (eq == std::string::npos) {
      const std::string key = trim(ov);
      const bool known = find_dotted(key) != nullptr;
      throw JobError(where, fmt::format("expected KEY=VALUE, got '{}'", ov),
                     known ? fmt::format("write {}=VALUE", key)
                           : "write e.g. --set train.epochs=3 or --set model.hidden=[512,256]");
    }
    const std::string key_text = trim(std::string_view(ov).substr(0, eq));
    const std::string raw = trim(std::string_view(ov).substr(eq + 1));
    const KeySpec& key = override_key(key_text, where);

    toml::table value = value_of(raw, key);
    // check_structure made sure that the tables already there are tables.
    toml::table& table = make_table(doc, key.table);
    value.get("v")->visit([&](auto& v) { table.insert_or_assign(key.name, v); });
    origins[key.dotted()] = where;
  }
}

}  // namespace dp::job_detail
