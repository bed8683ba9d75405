// Pins down, as literal numbers recorded from the code (tests/models/model_layout_records.h), what other
// parts read from a model's layout, for every model type in several configurations (models/model.h):
//  - fingerprint(): checked when a run resumes, so a change orphans every checkpoint of that model;
//  - hook_ranges(): the ranges gradient communication buckets are planned over;
//  - layers(): the layer table (names, kinds, parameter ranges, activations, FLOPs);
//  - each block's forward and backward FLOPs: what the estimate and the pipeline planners read.
// A deliberate change must update the record; the message on a mismatch prints the new one.
#define BOOST_TEST_MODULE model_layout
#include <boost/test/unit_test.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "models/model.h"
#include "tests/models/model_layout_records.h"

namespace {

using model_layouts::Config;
using model_layouts::Layout;

std::unique_ptr<dp::Model> build(const Config& c) {
  auto model = dp::make_model(c.spec, c.shape, /*seed=*/1);
  model->set_hook_slice(c.hook_slice);
  return model;
}

Layout layout_of(const dp::Model& m) {
  Layout l;
  l.fingerprint = m.fingerprint();
  for (const dp::ParamRange& r : m.hook_ranges()) l.hook_ranges.emplace_back(r.offset, r.count);
  for (const dp::LayerInfo& i : m.layers())
    l.layers.push_back({i.name, i.kind, i.param_offset, i.param_count, i.activations_per_sample, i.flops_per_sample});
  for (int b = 0; b < m.block_count(); ++b)
    l.block_flops.emplace_back(m.block(b).shape().forward_flops, m.block(b).shape().backward_flops);
  return l;
}

// Items joined into lines of at most 110 characters, each line starting with `indent`.
std::string wrapped(const std::vector<std::string>& items, const std::string& indent) {
  std::string s, line = indent;
  for (const std::string& item : items) {
    if (line.size() + item.size() >= 110 && line.size() > indent.size()) s += line + "\n", line = indent;
    line += (line.size() > indent.size() ? " " : "") + item;
  }
  return s + line + "\n";
}

// A layout as model_layout_records.h spells it.
std::string literal(const std::string& name, const Layout& l) {
  std::vector<std::string> ranges, rows, flops;
  for (const auto& [offset, count] : l.hook_ranges) ranges.push_back(fmt::format("{{{}, {}}},", offset, count));
  for (const auto& r : l.layers)
    rows.push_back(fmt::format("{{\"{}\", \"{}\", {}, {}, {}, {}}},", r.name, r.kind, r.param_offset, r.param_count,
                               r.activations_per_sample, r.flops_per_sample));
  for (const auto& [f, b] : l.block_flops) flops.push_back(fmt::format("{{{}, {}}},", f, b));
  std::string s = fmt::format("    {{\"{}\",\n     {{0x{:016x}ull,\n      {{\n", name, l.fingerprint);
  s += wrapped(ranges, "       ") + "      },\n      {\n";
  for (const std::string& row : rows) s += "       " + row + "\n";
  return s + "      },\n      {\n" + wrapped(flops, "       ") + "      }}},\n";
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_configuration_has_a_record) {
  const auto records = model_layouts::records();
  BOOST_TEST(records.size() == model_layouts::configs().size());
  for (const Config& c : model_layouts::configs()) BOOST_TEST(records.count(c.name) == 1u, c.name);
}

BOOST_AUTO_TEST_CASE(layouts_match_the_records) {
  const auto records = model_layouts::records();
  for (const Config& c : model_layouts::configs()) {
    BOOST_TEST_CONTEXT(c.name) {
      const Layout got = layout_of(*build(c));
      const auto it = records.find(c.name);
      if (it == records.end()) continue;  // every_configuration_has_a_record fails
      const Layout& want = it->second;
      const bool same = got.fingerprint == want.fingerprint && got.hook_ranges == want.hook_ranges &&
                        got.layers == want.layers && got.block_flops == want.block_flops;
      BOOST_TEST(same, "the layout differs from its record; it is now:\n" << literal(c.name, got));
      if (same) continue;
      // Which part differs.
      BOOST_TEST(got.fingerprint == want.fingerprint);
      BOOST_TEST((got.hook_ranges == want.hook_ranges), "hook ranges");
      BOOST_TEST(got.layers.size() == want.layers.size());
      for (size_t i = 0; i < std::min(got.layers.size(), want.layers.size()); ++i)
        BOOST_TEST((got.layers[i] == want.layers[i]), "layer " << i << " (" << want.layers[i].name << ")");
      BOOST_TEST(got.block_flops.size() == want.block_flops.size());
      for (size_t i = 0; i < std::min(got.block_flops.size(), want.block_flops.size()); ++i)
        BOOST_TEST((got.block_flops[i] == want.block_flops[i]), "block " << i);
    }
  }
}
