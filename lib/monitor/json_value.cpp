// Recursive-descent JSON parser for JsonValue (json_value.h). Strict enough to reject a truncated line:
// the monitor skips lines it cannot parse rather than guessing at their content.
#include "lib/monitor/json_value.h"

#include <fmt/format.h>

#include <cstdlib>

#include "lib/core/error.h"

namespace dp::monitor {

class JsonParser {
 public:
  JsonParser(std::string_view text, const std::string& where) : s_(text), where_(where) {}

  JsonValue document() {
    JsonValue v = value(0);
    skip_space();
    if (at_ < s_.size()) fail("text after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw DataError(where_, fmt::format("{} at offset {}", what, at_), "the file is not JSON written by dptrain");
  }
  void skip_space() {
    while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\n' || s_[at_] == '\r' || s_[at_] == '\t')) ++at_;
  }
  char peek() {
    skip_space();
    if (at_ >= s_.size()) fail("unexpected end");
    return s_[at_];
  }
  void expect(char c) {
    if (peek() != c) fail(fmt::format("expected '{}'", c));
    ++at_;
  }
  bool literal(std::string_view word) {
    if (s_.substr(at_, word.size()) != word) return false;
    at_ += word.size();
    return true;
  }

  JsonValue value(int depth) {
    if (depth > 64) fail("nesting too deep");
    JsonValue v;
    const char c = peek();
    if (c == '{') {
      v.kind_ = JsonValue::Kind::object;
      ++at_;
      if (peek() == '}') return ++at_, v;
      for (;;) {
        if (peek() != '"') fail("expected a member name");
        std::string key = string();
        expect(':');
        v.members_[std::move(key)] = value(depth + 1);
        if (peek() == ',') { ++at_; continue; }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.kind_ = JsonValue::Kind::array;
      ++at_;
      if (peek() == ']') return ++at_, v;
      for (;;) {
        v.items_.push_back(value(depth + 1));
        if (peek() == ',') { ++at_; continue; }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.kind_ = JsonValue::Kind::string;
      v.string_ = string();
      return v;
    }
    if (literal("true")) {
      v.kind_ = JsonValue::Kind::boolean;
      v.boolean_ = true;
      return v;
    }
    if (literal("false")) {
      v.kind_ = JsonValue::Kind::boolean;
      return v;
    }
    if (literal("null")) return v;
    v.kind_ = JsonValue::Kind::number;
    v.number_ = number();
    return v;
  }

  double number() {
    const size_t begin = at_;
    while (at_ < s_.size() && std::string_view("+-0123456789.eE").find(s_[at_]) != std::string_view::npos) ++at_;
    if (at_ == begin) fail("expected a value");
    const std::string digits(s_.substr(begin, at_ - begin));
    char* end = nullptr;
    const double d = std::strtod(digits.c_str(), &end);
    if (end != digits.c_str() + digits.size()) fail("malformed number");
    return d;
  }

  std::string string() {
    ++at_;  // the opening quote
    std::string out;
    while (at_ < s_.size() && s_[at_] != '"') {
      char c = s_[at_++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_ >= s_.size()) break;
      c = s_[at_++];
      switch (c) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': {
          if (at_ + 4 > s_.size()) fail("truncated \\u escape");
          const unsigned code = unsigned(std::strtoul(std::string(s_.substr(at_, 4)).c_str(), nullptr, 16));
          at_ += 4;
          if (code < 0x80) {
            out += char(code);
          } else if (code < 0x800) {
            out += char(0xC0 | (code >> 6));
            out += char(0x80 | (code & 0x3F));
          } else {
            out += char(0xE0 | (code >> 12));
            out += char(0x80 | ((code >> 6) & 0x3F));
            out += char(0x80 | (code & 0x3F));
          }
          break;
        }
        default: out += c;  // \" \\ \/
      }
    }
    if (at_ >= s_.size()) fail("unterminated string");
    ++at_;  // the closing quote
    return out;
  }

  std::string_view s_;
  std::string where_;
  size_t at_ = 0;
};

const JsonValue* JsonValue::find(const std::string& key) const {
  if (kind_ != Kind::object) return nullptr;
  const auto it = members_.find(key);
  return it == members_.end() ? nullptr : &it->second;
}

double JsonValue::number(const std::string& key, double fallback) const {
  const JsonValue* v = find(key);
  return v && v->kind_ == Kind::number ? v->number_ : fallback;
}

std::string JsonValue::text(const std::string& key, const std::string& fallback) const {
  const JsonValue* v = find(key);
  return v && v->kind_ == Kind::string ? v->string_ : fallback;
}

JsonValue JsonValue::parse(std::string_view text, const std::string& where) {
  return JsonParser(text, where).document();
}

}  // namespace dp::monitor
