// Reading a job file: TOML syntax, structure (known tables and keys; job_structure.cpp), value types and
// ranges, giving FILE:LINE:COL errors with hints. Overrides are applied between the structure check and
// the value checks.
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "lib/core/error.h"
#include "lib/job/job.h"
#include "lib/job/job_internal.h"
#include "lib/job/schema.h"
#include "lib/job/suggest.h"

namespace dp {
namespace job_detail {

namespace {

class Reader {
 public:
  Reader(const toml::table& doc, const std::string& src, const Origins& origins)
      : doc_(doc), src_(src), origins_(origins) {}

  // The value node of a key; nullptr when the key is not given.
  const toml::node* node(const KeySpec& key) const {
    const toml::table* t = table_at(doc_, key.table);
    return t ? t->get(key.name) : nullptr;
  }

  // Whether the key was given, in the file or by an override.
  bool given(const KeySpec& key) const { return node(key) || origins_.count(key.dotted()); }

  // Where a key's value (or one element of it) is, for messages.
  std::string where(const KeySpec& key, const toml::node* n, int index = -1) const {
    if (auto it = origins_.find(key.dotted()); it != origins_.end()) return it->second;
    if (!n) return src_;
    if (index >= 0 && n->is_array() && static_cast<std::size_t>(index) < n->as_array()->size())
      return position(src_, n->as_array()->get(static_cast<std::size_t>(index))->source());
    return position(src_, n->source());
  }

  [[noreturn]] void type_error(const KeySpec& key, const toml::node& n, std::string_view expected,
                               int index = -1) const {
    const toml::node& bad = index >= 0 ? *n.as_array()->get(static_cast<std::size_t>(index)) : n;
    std::string hint;
    if (expected == "a string")
      hint = "strings are quoted: \"...\"";
    else if (expected == "an integer" && bad.is_floating_point())
      hint = "write a whole number, without a decimal point or exponent";
    else if (expected == "an array of strings" && bad.is_string() && bad.as_string()->get().starts_with("["))
      hint = "not a valid TOML array; quote strings inside it, e.g. [\"a:2\", \"b:2\"]";
    else if (expected.starts_with("an array") && bad.is_string() && bad.as_string()->get().starts_with("["))
      hint = "not a valid TOML array; separate the numbers by commas, e.g. [1, 2.5]";
    else if (expected.starts_with("an array") && !bad.is_array())
      hint = "write an array: [a, b, ...]";
    else if (expected == "a boolean")
      hint = "write true or false";
    const std::string subject = index >= 0 ? fmt::format("{}[{}]", key.dotted(), index) : key.dotted();
    throw JobError(where(key, &n, index),
                   fmt::format("{}: expected {}, got {}", subject, expected, type_phrase(bad)), hint);
  }

  int64_t integer(const KeySpec& key, const toml::node& n, int index = -1) const {
    const toml::node& v = index >= 0 ? *n.as_array()->get(static_cast<std::size_t>(index)) : n;
    if (auto i = v.as_integer()) return i->get();
    type_error(key, n, "an integer", index);
  }

  // A float, or an integer converted to one.
  double number(const KeySpec& key, const toml::node& n, int index = -1) const {
    const toml::node& v = index >= 0 ? *n.as_array()->get(static_cast<std::size_t>(index)) : n;
    if (auto f = v.as_floating_point()) return f->get();
    if (auto i = v.as_integer()) return static_cast<double>(i->get());
    type_error(key, n, "a number", index);
  }

  std::string string(const KeySpec& key, const toml::node& n, int index = -1) const {
    const toml::node& v = index >= 0 ? *n.as_array()->get(static_cast<std::size_t>(index)) : n;
    if (auto s = v.as_string()) return s->get();
    type_error(key, n, "a string", index);
  }

  const toml::array& array(const KeySpec& key, const toml::node& n, std::string_view expected) const {
    if (auto a = n.as_array()) return *a;
    type_error(key, n, expected);
  }

  void read(const KeySpec& key, Job& job) const {
    const toml::node* n = node(key);
    if (!n) return;
    std::visit(
        [&](auto field) {
          using T = std::remove_pointer_t<decltype(field)>;
          if constexpr (std::is_same_v<T, EnumRef>) {
            field.assign(string(key, *n));  // an unknown name is reported by check(), in schema order
          } else if constexpr (std::is_same_v<T, int64_t>) {
            *field = integer(key, *n);
          } else if constexpr (std::is_same_v<T, uint64_t>) {
            const int64_t v = integer(key, *n);
            if (v < 0)
              throw JobError(where(key, n), fmt::format("{}: must be at least 0, got {}", key.dotted(), v));
            *field = static_cast<uint64_t>(v);
          } else if constexpr (std::is_same_v<T, double>) {
            *field = number(key, *n);
          } else if constexpr (std::is_same_v<T, std::string>) {
            *field = string(key, *n);
          } else if constexpr (std::is_same_v<T, bool>) {
            if (auto b = n->as_boolean())
              *field = b->get();
            else
              type_error(key, *n, "a boolean");
          } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
            const toml::array& a = array(key, *n, "an array of integers");
            field->clear();
            for (std::size_t i = 0; i < a.size(); ++i)
              field->push_back(integer(key, *n, static_cast<int>(i)));
          } else if constexpr (std::is_same_v<T, std::vector<double>>) {
            const toml::array& a = array(key, *n, "an array of numbers");
            field->clear();
            for (std::size_t i = 0; i < a.size(); ++i) field->push_back(number(key, *n, static_cast<int>(i)));
          } else {
            static_assert(std::is_same_v<T, std::vector<std::string>>);
            const toml::array& a = array(key, *n, "an array of strings");
            field->clear();
            for (std::size_t i = 0; i < a.size(); ++i) field->push_back(string(key, *n, static_cast<int>(i)));
          }
        },
        key.field(job));
  }

  // The key's value: an enumeration's name, then the key's range rule.
  void check(const KeySpec& key, const Job& job) const {
    std::optional<Problem> p;
    if (const toml::node* n = node(key); n && n->is_string()) p = check_enum_name(key, n->as_string()->get());
    if (!p && key.check) p = key.check(job);
    if (p) throw JobError(problem_where(key, *p), subject(key, *p) + ": " + p->what, p->hint);
  }

  // The key's warning, if it has one, at the end of `warnings`.
  void warn(const KeySpec& key, const Job& job, std::vector<JobWarning>& warnings) const {
    if (!key.warn) return;
    if (auto p = key.warn(job)) warnings.push_back({problem_where(key, *p), subject(key, *p) + ": " + p->what, p->hint});
  }

 private:
  static std::string subject(const KeySpec& key, const Problem& p) {
    return p.index >= 0 ? fmt::format("{}[{}]", key.dotted(), p.index) : key.dotted();
  }

  // Where a problem of `key` is reported: at the key (or its element); but a cross-key problem with this
  // key at its default points at the other key, which was given.
  std::string problem_where(const KeySpec& key, const Problem& p) const {
    const KeySpec* other = p.other.empty() ? nullptr : find_dotted(p.other);
    if (!given(key) && other && given(*other)) return where(*other, node(*other));
    return where(key, node(key), p.index);
  }

  const toml::table& doc_;
  const std::string& src_;
  const Origins& origins_;
};

// The text of a file, or a JobError at `where` naming what the file is.
}  // namespace

// A pipe or a device (/dev/zero) may never end, and a job or cluster file is a few kilobytes of TOML:
// either is refused before it is read. `file`: how the error names it.
void check_settings_file(const std::string& path, const std::string& where, const std::string& file,
                         const std::string& hint) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) return;  // the reader says why it cannot open it
  if (!std::filesystem::is_regular_file(status))
    throw JobError(where, fmt::format("cannot read {}: not a regular file (a pipe or a device may never end)", file),
                   hint);
  constexpr uintmax_t kMaxBytes = uintmax_t(64) << 20;
  if (std::filesystem::file_size(path, ec) > kMaxBytes && !ec)
    throw JobError(where, fmt::format("cannot read {}: larger than 64 MiB, not a file of settings", file), hint);
}

namespace {

std::string read_text(const std::string& path, const std::string& where, const char* what, const char* hint) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw JobError(where, fmt::format("cannot read the {} {}: it is a directory", what, path), hint);
  check_settings_file(path, where, fmt::format("the {} {}", what, path), hint);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    throw JobError(where, fmt::format("cannot read the {} {}: {}", what, path, std::strerror(err)), hint);
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw JobError(where, fmt::format("cannot read the {} {}: read error", what, path));
  return text.str();
}

// Copies every key of `from` (tables recursively; `table` is its dotted path) that `into` lacks, recording
// where each came from (copies lose their source positions).
void merge_missing(toml::table& into, const toml::table& from, const std::string& table, const std::string& path,
                   Origins& origins) {
  for (const auto& [key, node] : from) {
    const std::string dotted = table + "." + std::string(key.str());
    if (const toml::table* sub = node.as_table()) {
      toml::node* mine = into.get(key.str());
      if (!mine) into.insert(key, toml::table{});
      if (toml::table* t = into.get(key.str())->as_table()) merge_missing(*t, *sub, dotted, path, origins);
    } else if (!into.contains(key.str())) {
      into.insert(key, node);
      origins[dotted] = position(path, node.source());
    }
  }
}

// Anything at the top of a cluster file but its [cluster] table: a misspelt [cluster] gets a did-you-mean,
// another table of the job file or a key outside any table says where it belongs.
void check_cluster_file_top(const toml::table& other, const std::string& path) {
  for (const auto& [key, node] : other) {
    const std::string name(key.str());
    if (name == "cluster") continue;
    // A header ([clustr]) is reported where it starts, a key at the key.
    const auto& region = node.is_table() && node.source().begin.line ? node.source() : key.source();
    const std::string where = position(path, region);
    if (!node.is_table()) {
      const std::string hint = find_key("cluster", name)
                                   ? fmt::format("'{}' is a key of [cluster]; put it under that header", name)
                                   : "a cluster file holds only [cluster] tables";
      throw JobError(where, fmt::format("unknown key '{}' outside any table", name), hint);
    }
    if (is_table(name))
      throw JobError(where, fmt::format("a cluster file holds only [cluster] tables, found '{}'", name),
                     "move the other tables into the job file");
    throw JobError(where, fmt::format("unknown table '[{}]'", name),
                   closest(name, {"cluster"}).empty() ? "a cluster file holds only [cluster] tables"
                                                      : "did you mean '[cluster]'?");
  }
}

// [cluster] file = "...": the file's [cluster] table supplies the keys the job leaves out. In the job file
// the path is relative to its folder; from the command line (--set cluster.file, plan --cluster), to the
// current directory, as any path on a command line. Returns the file's absolute path ("" when none).
std::string merge_cluster_file(toml::table& doc, const std::string& source_name, Origins& origins) {
  const toml::table* cluster = table_at(doc, "cluster");
  const toml::node* file_node = cluster ? cluster->get("file") : nullptr;
  if (!file_node) return {};
  const auto origin = origins.find("cluster.file");
  const bool from_command_line = origin != origins.end();
  const std::string where = from_command_line ? origin->second : position(source_name, file_node->source());
  const auto* file = file_node->as_string();
  if (!file) throw JobError(where, "cluster.file: expected a string, got " + type_phrase(*file_node));
  if (file->get().empty()) return {};  // "": none
  std::filesystem::path path(file->get());
  if (path.is_relative() && !from_command_line) path = std::filesystem::path(source_name).parent_path() / path;
  const std::string text =
      read_text(path.string(), where, "cluster file", "cluster.file names a TOML file holding a [cluster] table");
  toml::table other;
  try {
    other = toml::parse(text, path.string());
  } catch (const toml::parse_error& e) {
    throw JobError(position(path.string(), e.source()), std::string(e.description()), "the file is not valid TOML");
  }
  check_cluster_file_top(other, path.string());
  check_structure(other, path.string());
  if (const toml::table* t = table_at(other, "cluster"); t && t->contains("file"))
    throw JobError(position(path.string(), t->get("file")->source()),
                   "a cluster file cannot name another cluster file", "remove cluster.file from it");
  if (const toml::table* t = table_at(other, "cluster"))
    merge_missing(make_table(doc, "cluster"), *t, "cluster", path.string(), origins);
  return std::filesystem::absolute(path).lexically_normal().string();
}

}  // namespace
}  // namespace job_detail

Job parse_job(std::string_view text, const std::string& source_name,
              const std::vector<std::string>& overrides, const std::string& cluster_file) {
  using namespace job_detail;
  toml::table doc;
  try {
    doc = toml::parse(text, std::string_view(source_name));
  } catch (const toml::parse_error& e) {
    throw JobError(position(source_name, e.source()), std::string(e.description()),
                   "the file is not valid TOML");
  }
  check_structure(doc, source_name);
  Origins origins;
  if (!cluster_file.empty()) {
    // Another cluster: the job's machine description gives way to the file's (its emulation stays).
    toml::table& cluster = make_table(doc, "cluster");
    std::vector<std::string> keys;
    for (const auto& [key, node] : cluster)
      if (key.str() != "emulate") keys.emplace_back(key.str());
    for (const auto& key : keys) cluster.erase(key);
    cluster.insert_or_assign("file", cluster_file);
    origins["cluster.file"] = "--cluster " + cluster_file;
  }
  // Overrides first, so that --set cluster.file names the file merged (and the keys they set stay theirs).
  apply_overrides(doc, overrides, origins);
  if (auto origin = origins.find("cluster.file");
      !cluster_file.empty() && origin != origins.end() && origin->second != "--cluster " + cluster_file)
    throw JobError(origin->second, "names a cluster file besides --cluster " + cluster_file,
                   "give the cluster file once: --cluster FILE or --set cluster.file=FILE");
  const std::string cluster_path = merge_cluster_file(doc, source_name, origins);

  Job job;
  job.source = source_name;
  const Reader reader(doc, source_name, origins);
  for (const auto& key : schema()) reader.read(key, job);
  for (const auto& key : schema()) reader.check(key, job);
  for (const auto& key : schema()) reader.warn(key, job, job.warnings);
  job.launch.ranks_given = reader.given(*find_dotted("launch.ranks"));
  job.cluster.file = cluster_path;  // absolute, for whoever reports which file it was
  // A relative hostfile is the job file's neighbour; ranks and emitted jobs get the absolute path.
  if (!job.launch.hostfile.empty() && std::filesystem::path(job.launch.hostfile).is_relative())
    job.launch.hostfile =
        std::filesystem::absolute(std::filesystem::path(source_name).parent_path() / job.launch.hostfile)
            .lexically_normal()
            .string();
  return job;
}

std::string JobWarning::line() const {
  std::string s = where.empty() ? std::string("warning: ") : where + ": warning: ";
  s += what;
  if (!hint.empty()) s += " (hint: " + hint + ")";
  return s;
}

Job load_job(const std::string& path, const std::vector<std::string>& overrides, const std::string& cluster_file) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw JobError(path, "cannot read the job file: it is a directory", "give the path of a .toml job file");
  job_detail::check_settings_file(path, path, "the job file", "give the path of a .toml job file");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    throw JobError(path, std::string("cannot read the job file: ") + std::strerror(err),
                   "check the path; job files are described in dptrain-job(5)");
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw JobError(path, "cannot read the job file: read error");
  return parse_job(text.str(), path, overrides, cluster_file);
}

}  // namespace dp
