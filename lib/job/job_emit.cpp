// The resolved job as text: every key of the schema with its value (defaults included), as TOML that
// parse_job reads back to the same Job, and as JSON.
#include <toml++/toml.h>

#include <sstream>

#include "lib/job/job.h"
#include "lib/job/schema.h"

namespace dp {

namespace {

toml::table to_table(const Job& job) {
  Job copy = job;  // KeySpec::field wants a mutable Job
  toml::table root;
  for (const auto& key : job_detail::schema()) {
    toml::table* section = root.insert(key.table, toml::table{}).first->second.as_table();
    std::visit(
        [&](auto* field) {
          using T = std::remove_pointer_t<decltype(field)>;
          if constexpr (std::is_same_v<T, uint64_t>) {
            section->insert_or_assign(key.name, static_cast<int64_t>(*field));
          } else if constexpr (std::is_same_v<T, std::vector<int64_t>> ||
                               std::is_same_v<T, std::vector<std::string>>) {
            toml::array a;
            for (const auto& v : *field) a.push_back(v);
            section->insert_or_assign(key.name, std::move(a));
          } else {
            section->insert_or_assign(key.name, *field);
          }
        },
        key.field(copy));
  }
  return root;
}

}  // namespace

std::string job_to_toml(const Job& job) {
  std::ostringstream out;
  out << to_table(job) << "\n";
  return out.str();
}

std::string job_to_json(const Job& job) {
  std::ostringstream out;
  out << toml::json_formatter{to_table(job)} << "\n";
  return out.str();
}

}  // namespace dp
