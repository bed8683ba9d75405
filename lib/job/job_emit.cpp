// The resolved job as text: every key of the schema with its value (defaults included; a cluster file's
// keys in [cluster], and cluster.file ""), as TOML that parse_job reads back to the same Job (a nested table under its own [parallel.comm] header), and as JSON
// (nested tables as nested objects).
#include <toml++/toml.h>

#include <sstream>

#include "lib/job/job.h"
#include "lib/job/job_internal.h"
#include "lib/job/schema.h"

namespace dp {

namespace {

toml::table to_table(const Job& job) {
  Job copy = job;  // KeySpec::field wants a mutable Job
  // The cluster file's keys are all here already: the text names none, so that it reads back anywhere.
  copy.cluster.file.clear();
  toml::table root;
  for (const auto& key : job_detail::schema()) {
    toml::table* section = &job_detail::make_table(root, key.table);
    std::visit(
        [&](auto field) {
          using T = std::remove_pointer_t<decltype(field)>;
          if constexpr (std::is_same_v<T, job_detail::EnumRef>) {
            section->insert_or_assign(key.name, field.name());
          } else if constexpr (std::is_same_v<T, uint64_t>) {
            section->insert_or_assign(key.name, static_cast<int64_t>(*field));
          } else if constexpr (std::is_same_v<T, std::vector<int64_t>> ||
                               std::is_same_v<T, std::vector<double>> ||
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
  // Nested tables unindented: "[parallel.comm]" and its keys start their lines, like every other table.
  constexpr auto flags = toml::toml_formatter::default_flags & ~toml::format_flags::indent_sub_tables;
  out << toml::toml_formatter{to_table(job), flags} << "\n";
  return out.str();
}

std::string job_to_json(const Job& job) {
  std::ostringstream out;
  out << toml::json_formatter{to_table(job)} << "\n";
  return out.str();
}

}  // namespace dp
