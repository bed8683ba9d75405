// A small JSON reader for what dptrain itself writes (metrics.jsonl lines, summary.json): objects,
// arrays, numbers, strings, true/false/null. Malformed text throws DataError naming the offset.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dp::monitor {

class JsonValue {
 public:
  enum class Kind { null, boolean, number, string, array, object };

  Kind kind() const { return kind_; }
  bool is_object() const { return kind_ == Kind::object; }
  bool is_array() const { return kind_ == Kind::array; }
  bool is_number() const { return kind_ == Kind::number; }
  // The member `key` of an object, or nullptr when absent (or when this is not an object).
  const JsonValue* find(const std::string& key) const;
  // A member's number / string, or `fallback` when absent or of another kind.
  double number(const std::string& key, double fallback) const;
  std::string text(const std::string& key, const std::string& fallback = {}) const;
  double as_number() const { return number_; }
  bool as_bool() const { return boolean_; }
  const std::string& as_string() const { return string_; }
  const std::vector<JsonValue>& items() const { return items_; }
  const std::map<std::string, JsonValue>& members() const { return members_; }

  // Parses a whole document; `where` names it in errors ("metrics.jsonl:12").
  static JsonValue parse(std::string_view text, const std::string& where);

 private:
  friend class JsonParser;
  Kind kind_ = Kind::null;
  bool boolean_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<JsonValue> items_;
  std::map<std::string, JsonValue> members_;
};

}  // namespace dp::monitor
