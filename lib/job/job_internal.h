// Helpers shared by the job parser's parts (job_parse.cpp, job_overrides.cpp): positions for messages,
// type phrases and did-you-mean hints for unknown keys and tables.
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

// Hints for an unknown key of a known table, an unknown table, and a key outside any table.
std::string unknown_key_hint(std::string_view table, std::string_view name);
std::string unknown_table_hint(std::string_view name);
std::string outside_table_hint(std::string_view name);

// Applies "dotted.key=value" overrides to the parsed document, recording their origins. Throws JobError
// (where = "--set KEY=VALUE") for a missing '=' or an unknown key.
void apply_overrides(toml::table& doc, const std::vector<std::string>& overrides, Origins& origins);

}  // namespace dp::job_detail
