// Helpers shared by the job parser's parts (job_structure.cpp, job_parse.cpp, job_overrides.cpp,
// job_emit.cpp): positions for messages, type phrases, did-you-mean hints for unknown keys and tables,
// the structure check, and finding (or making) a nested table of a parsed document by its dotted path.
#pragma once

#include <toml++/toml.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace dp::job_detail {

// Where each overridden key's value came from ("--set train.epochs=3"), by dotted key. Keys not in
// the map are reported at their node's position in the file.
using Origins = std::map<std::string, std::string>;

// "FILE:LINE:COL"; just FILE when the region has no position.
std::string position(const std::string& source, const toml::source_region& region);

// "an integer", "a string", "an array", ... for a node's type.
std::string type_phrase(const toml::node& node);

// Hints for an unknown key of a known table, an unknown table (a dotted path: "parallel.comms"), and a
// key outside any table.
std::string unknown_key_hint(std::string_view table, std::string_view name);
std::string unknown_table_hint(std::string_view table);
std::string outside_table_hint(std::string_view name);

// Only known tables (at any depth), each a table, holding only known keys and known tables. Throws
// JobError at the offending key or header. Values are checked later, by the reader.
void check_structure(const toml::table& doc, const std::string& src);

// The table at a dotted path ("parallel.comm") of a document; nullptr when absent or not a table.
const toml::table* table_at(const toml::table& doc, std::string_view path);
// The same, inserting the missing tables on the way; an existing non-table node on the way is replaced.
toml::table& make_table(toml::table& doc, std::string_view path);

// Applies "dotted.key=value" overrides to the parsed document, recording their origins. Throws JobError
// (where = "--set KEY=VALUE") for a missing '=' or an unknown key.
void apply_overrides(toml::table& doc, const std::vector<std::string>& overrides, Origins& origins);

}  // namespace dp::job_detail
