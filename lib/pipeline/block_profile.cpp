// dptrain's layer profile files (profile.h): written by `dptrain profile --layers --out`, read by `plan`.
#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <tuple>
#include <toml++/toml.h>

#include "lib/core/error.h"
#include "lib/core/json.h"
#include "lib/pipeline/profile.h"

namespace dp::pipeline {
namespace {

constexpr int64_t kMaxMicroBatch = int64_t(1) << 31;  // samples; far above any batch a device holds

std::string where(const std::string& path, const toml::source_region& r) {
  return r.begin.line == 0 ? path : fmt::format("{}:{}:{}", path, r.begin.line, r.begin.column);
}

double number(const toml::table& t, const char* key, const std::string& path, const std::string& what) {
  const toml::node* n = t.get(key);
  if (!n) throw ProfileError(where(path, t.source()), fmt::format("{} has no {}", what, key),
                             "every [[block]] gives name, forward_ms, backward_ms, output_bytes, saved_bytes, "
                             "work_bytes and param_bytes");
  const auto v = n->value<double>();
  if (!v) throw ProfileError(where(path, n->source()), fmt::format("{}: {} is not a number", what, key), "write a number");
  if (!std::isfinite(*v))  // TOML allows inf and nan
    throw ProfileError(where(path, n->source()), fmt::format("{}: {} = {} is not a finite number", what, key, *v),
                       "write a finite number");
  if (*v < 0) throw ProfileError(where(path, n->source()), fmt::format("{}: {} = {} is negative", what, key, *v),
                                 "times and sizes are at least 0");
  return *v;
}

}  // namespace

std::string BlockProfile::timed_on() const {
  return timed_resting > 1
             ? fmt::format("{}, x{:.3g} for ranks emulated at {:.3g}x", device, rest_scale, timed_resting)
             : device;
}

void write_block_profile(const std::string& path, const BlockProfile& p) {
  std::ostringstream out;
  out << "# dptrain layer profile (man dptrain(1), LAYER PROFILES): times per micro-batch of micro_batch\n"
         "# samples, sizes in bytes per sample. `dptrain plan JOB.toml --profile FILE` reads it.\n"
      << fmt::format("[profile]\nmodel = {}\ndevice = {}\nmicro_batch = {}\ninput_bytes = {}\n", json_quoted(p.model),
                     json_quoted(p.device), p.micro_batch, p.input_bytes);
  if (p.step_extra_ms > 0)
    out << fmt::format("step_extra_ms = {:.6g}\nstep_extra_fixed_ms = {:.6g}\n", p.step_extra_ms, p.step_extra_fixed_ms);
  if (p.timed_resting > 1)
    out << fmt::format("# scaled to ranks emulated at timed_resting: a whole step resting factor - 1 times it after each,\n"
                       "# against back to back, rest_scale times as long\ntimed_resting = {:.6g}\nrest_scale = {:.6g}\n",
                       p.timed_resting, p.rest_scale);
  for (const BlockRow& b : p.blocks)
    out << fmt::format("\n[[block]]\nname = {}\nforward_ms = {:.6g}\nbackward_ms = {:.6g}\nforward_fixed_ms = {:.6g}\n"
                       "backward_fixed_ms = {:.6g}\nupdate_ms = {:.6g}\noutput_bytes = {}\nsaved_bytes = {}\nwork_bytes = {}\n"
                       "param_bytes = {}\n",
                       json_quoted(b.name), b.forward_ms, b.backward_ms, b.forward_fixed_ms, b.backward_fixed_ms,
                       b.update_ms, b.output_bytes, b.saved_bytes, b.work_bytes, b.param_bytes)
        << (b.shares_weights_with >= 0 ? fmt::format("shares_weights_with = {}\n", b.shares_weights_with) : "");
  std::ofstream f(path);
  if (!(f << out.str()))
    throw ProfileError(path, "cannot write the profile", "check that the folder exists and is writable");
}

bool is_block_profile(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    return line.rfind("[profile]", 0) == 0;
  }
  return false;
}

BlockProfile read_block_profile(const std::string& path) {
  toml::table doc;
  try {
    doc = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    throw ProfileError(where(path, e.source()), std::string(e.description()), "the profile is not valid TOML");
  }
  BlockProfile p;
  const toml::table* head = doc["profile"].as_table();
  if (!head) throw ProfileError(path, "no [profile] table", "a profile begins with [profile] (model, micro_batch, ...)");
  p.model = (*head)["model"].value_or(std::string());
  p.device = (*head)["device"].value_or(std::string("cpu"));
  const double mb = number(*head, "micro_batch", path, "[profile]");
  if (mb < 1 || mb > kMaxMicroBatch || mb != std::floor(mb))  // compared as doubles: no cast out of range
    throw ProfileError(where(path, head->get("micro_batch")->source()),
                       fmt::format("[profile]: micro_batch = {} is not a whole number of samples from 1 to {}", mb,
                                   kMaxMicroBatch),
                       "the samples the times were measured on");
  p.micro_batch = int64_t(mb);
  p.input_bytes = number(*head, "input_bytes", path, "[profile]");
  if (head->contains("step_extra_ms")) p.step_extra_ms = number(*head, "step_extra_ms", path, "[profile]");
  if (head->contains("step_extra_fixed_ms")) {
    p.step_extra_fixed_ms = number(*head, "step_extra_fixed_ms", path, "[profile]");
    if (p.step_extra_fixed_ms > p.step_extra_ms)
      throw ProfileError(where(path, head->get("step_extra_fixed_ms")->source()),
                         fmt::format("[profile]: step_extra_fixed_ms = {} is more than step_extra_ms, {}",
                                     p.step_extra_fixed_ms, p.step_extra_ms),
                         "the fixed part of the step's extra time is at most that time");
  }
  for (auto [key, field, hint] :
       {std::tuple{"timed_resting", &p.timed_resting, "the emulated factor the times were scaled to (1: none)"},
        std::tuple{"rest_scale", &p.rest_scale, "the ratio that scaled the times (1: none)"}}) {
    if (!head->contains(key)) continue;
    *field = number(*head, key, path, "[profile]");
    if (*field < 1)
      throw ProfileError(where(path, head->get(key)->source()), fmt::format("[profile]: {} = {} is below 1", key, *field),
                         hint);
  }
  const toml::array* blocks = doc["block"].as_array();
  if (!blocks || blocks->empty()) throw ProfileError(path, "no [[block]] tables", "profile a model with profile --layers");
  for (const toml::node& n : *blocks) {
    const toml::table* t = n.as_table();
    if (!t) throw ProfileError(where(path, n.source()), "a block is not a table", "write [[block]] tables");
    BlockRow b;
    b.name = (*t)["name"].value_or(std::string());
    const std::string what = fmt::format("block {}", b.name.empty() ? std::to_string(p.blocks.size()) : b.name);
    b.forward_ms = number(*t, "forward_ms", path, what);
    b.backward_ms = number(*t, "backward_ms", path, what);
    b.output_bytes = number(*t, "output_bytes", path, what);
    b.saved_bytes = number(*t, "saved_bytes", path, what);
    b.work_bytes = number(*t, "work_bytes", path, what);
    b.param_bytes = number(*t, "param_bytes", path, what);
    for (auto [key, fixed, total] : {std::tuple{"forward_fixed_ms", &b.forward_fixed_ms, b.forward_ms},
                                     std::tuple{"backward_fixed_ms", &b.backward_fixed_ms, b.backward_ms}}) {
      if (!t->contains(key)) continue;
      *fixed = number(*t, key, path, what);
      if (*fixed > total)
        throw ProfileError(where(path, t->get(key)->source()),
                           fmt::format("{}: {} = {} is more than the whole time, {}", what, key, *fixed, total),
                           "the fixed part of a block's time is at most its time");
    }
    if (t->contains("update_ms")) b.update_ms = number(*t, "update_ms", path, what);
    if (t->contains("shares_weights_with")) {
      const double other = number(*t, "shares_weights_with", path, what);
      if (other != std::floor(other) || other >= double(blocks->size()))
        throw ProfileError(where(path, t->get("shares_weights_with")->source()),
                           fmt::format("{}: shares_weights_with = {} is not a block's index", what, other),
                           fmt::format("blocks are numbered 0-{} in file order", blocks->size() - 1));
      b.shares_weights_with = int(other);
    }
    p.blocks.push_back(std::move(b));
  }
  return p;
}

}  // namespace dp::pipeline
