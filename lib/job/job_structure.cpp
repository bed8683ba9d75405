// The structure of a job document: known tables (nested ones such as [parallel.comm] included) holding
// known keys, with FILE:LINE:COL errors and did-you-mean hints for unknown keys and tables; plus the
// message helpers (positions, type phrases) and dotted-path table lookups shared by the parser's parts.
#include <fmt/format.h>

#include "lib/core/error.h"
#include "lib/job/job_internal.h"
#include "lib/job/schema.h"
#include "lib/job/suggest.h"

namespace dp::job_detail {

std::string position(const std::string& source, const toml::source_region& region) {
  // A node read from another file (a [cluster] file) carries that file's path.
  const std::string& file = region.path && !region.path->empty() ? *region.path : source;
  if (region.begin.line == 0) return file;
  return fmt::format("{}:{}:{}", file, region.begin.line, region.begin.column);
}

std::string type_phrase(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    default:
      return "nothing";
  }
}

static std::string bracketed(const std::vector<std::string>& tables) {
  std::vector<std::string> b;
  for (const auto& t : tables) b.push_back("[" + t + "]");
  return join(b);
}

// The last components of tables ("comm" for "parallel.comm").
static std::vector<std::string> leaves(const std::vector<std::string>& tables) {
  std::vector<std::string> l;
  for (const auto& t : tables) l.emplace_back(leaf_name(t));
  return l;
}

std::string unknown_key_hint(std::string_view table, std::string_view name) {
  const std::vector<std::string> keys = key_names(table);
  if (std::string near = closest(name, keys); !near.empty()) return "did you mean '" + near + "'?";
  const std::vector<std::string> subs = sub_tables(table);
  if (std::string near = closest(name, leaves(subs)); !near.empty())
    return fmt::format("did you mean the table '[{}.{}]'?", table, near);
  for (const auto& t : table_names())
    if (find_key(t, name)) return fmt::format("'{}' is a key of [{}]", name, t);
  if (keys.empty()) return fmt::format("[{}] holds only the tables {}", table, bracketed(subs));
  std::string hint = fmt::format("valid keys of [{}]: {}", table, join(keys));
  if (!subs.empty()) hint += "; tables: " + bracketed(subs);
  return hint;
}

std::string unknown_table_hint(std::string_view table) {
  // The first unknown component names the problem: "network" in "network.speed".
  std::string_view unknown = table;
  for (auto dot = table.find('.'); dot != std::string_view::npos; dot = table.find('.', dot + 1))
    if (!is_table(table.substr(0, dot))) {
      unknown = table.substr(0, dot);
      break;
    }
  const std::string_view parent = parent_table(unknown);
  const std::vector<std::string> siblings = sub_tables(parent);
  if (std::string near = closest(leaf_name(unknown), leaves(siblings)); !near.empty())
    return fmt::format("did you mean '[{}{}{}]'?", parent, parent.empty() ? "" : ".", near);
  if (parent.empty()) {
    // A nested table written at the top level: [comm] for [parallel.comm].
    for (const auto& t : table_names())
      if (t.find('.') != std::string::npos && leaf_name(t) == unknown)
        return fmt::format("did you mean '[{}]'?", t);
    return "valid tables: " + bracketed(siblings);
  }
  return fmt::format("valid tables in [{}]: {}", parent, bracketed(siblings));
}

std::string outside_table_hint(std::string_view name) {
  for (const auto& t : table_names())
    if (find_key(t, name)) return fmt::format("'{}' is a key of [{}]; put it under that header", name, t);
  return "every key belongs in one of the tables " + bracketed(table_names());
}

const toml::table* table_at(const toml::table& doc, std::string_view path) {
  const toml::table* t = &doc;
  while (t && !path.empty()) {
    const auto dot = path.find('.');
    t = t->get_as<toml::table>(path.substr(0, dot));
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
  }
  return t;
}

toml::table& make_table(toml::table& doc, std::string_view path) {
  toml::table* t = &doc;
  while (!path.empty()) {
    const auto dot = path.find('.');
    const std::string_view name = path.substr(0, dot);
    toml::table* next = t->get_as<toml::table>(name);
    if (!next) next = t->insert_or_assign(name, toml::table{}).first->second.as_table();
    t = next;
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
  }
  return *t;
}

// One table of the document, `path` being its dotted name ("" for the document itself).
static void check_table(const toml::table& table, const std::string& path, const std::string& src) {
  for (auto&& [k, v] : table) {
    const std::string name(k.str());
    const std::string full = path.empty() ? name : path + "." + name;
    if (!path.empty() && find_key(path, name)) continue;  // its value is checked by the reader
    if (is_table(full)) {
      const toml::table* t = v.as_table();
      if (!t) {
        const bool aot = v.is_array_of_tables();
        throw JobError(position(src, v.source()),
                       fmt::format("{}: expected a table, got {}", full, type_phrase(v)),
                       aot ? fmt::format("write [{}], not [[{}]]", full, full)
                           : fmt::format("write the keys under a [{}] header", full));
      }
      check_table(*t, full, src);
    } else if (v.is_table() && (path.empty() || !sub_tables(path).empty())) {
      // A header ([trian], [parallel.comms]) is reported where it starts; a dotted key at the key.
      const auto& region = v.source().begin.line ? v.source() : k.source();
      throw JobError(position(src, region), fmt::format("unknown table '[{}]'", full),
                     unknown_table_hint(full));
    } else if (path.empty()) {
      throw JobError(position(src, k.source()), fmt::format("unknown key '{}' outside any table", name),
                     outside_table_hint(name));
    } else {
      throw JobError(position(src, k.source()), fmt::format("unknown key '{}'", full),
                     unknown_key_hint(path, name));
    }
  }
}

void check_structure(const toml::table& doc, const std::string& src) { check_table(doc, "", src); }

}  // namespace dp::job_detail
