// The JSON writer and the flat line reader.
#include "json.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "escape.hpp"

namespace tk {

std::string json_fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

JsonObject& JsonObject::string(std::string_view key, std::string_view value) {
  return raw(key, json_string(value));
}

JsonObject& JsonObject::fixed(std::string_view key, double value, int decimals) {
  return raw(key, json_fixed(value, decimals));
}

JsonObject& JsonObject::boolean(std::string_view key, bool value) {
  return raw(key, value ? "true" : "false");
}

JsonObject& JsonObject::null(std::string_view key) { return raw(key, "null"); }

JsonObject& JsonObject::raw(std::string_view key, std::string_view json) {
  if (text_.size() > 1) text_ += ',';
  text_ += json_string(key);
  text_ += ':';
  text_ += json;
  return *this;
}

JsonArray& JsonArray::string(std::string_view value) { return raw(json_string(value)); }

JsonArray& JsonArray::raw(std::string_view json) {
  if (text_.size() > 1) text_ += ',';
  text_ += json;
  return *this;
}

namespace {

// Reads one line's flat object; the first thing it finds wrong ends the
// reading, in why_.
class FlatReader {
 public:
  explicit FlatReader(std::string_view line) : s_(line) {}

  bool read(std::map<std::string, std::string>& strings, std::map<std::string, double>& numbers) {
    skip();
    if (!expect('{')) return false;
    skip();
    if (peek() == '}') {
      ++at_;
    } else {
      for (;;) {
        std::string key;
        skip();
        if (!string(key)) return false;
        skip();
        if (!expect(':')) return false;
        skip();
        if (peek() == '"') {
          if (!string(strings[key])) return false;
        } else if (s_.compare(at_, 4, "true") == 0) {
          at_ += 4;
          numbers[key] = 1;
        } else if (s_.compare(at_, 5, "false") == 0) {
          at_ += 5;
          numbers[key] = 0;
        } else if (!number(numbers[key])) {
          return false;
        }
        skip();
        if (peek() != ',') break;
        ++at_;
      }
      if (!expect('}')) return false;
    }
    skip();
    return at_ == s_.size() || fail("text after the object");
  }

  const std::string& why() const { return why_; }

 private:
  bool fail(const char* why) {
    why_ = why;
    return false;
  }
  char peek() const { return at_ < s_.size() ? s_[at_] : '\0'; }
  void skip() {
    while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\t' || s_[at_] == '\r')) ++at_;
  }
  bool expect(char c) {
    if (peek() != c) {
      why_ = std::string("expected '") + c + "'";
      return false;
    }
    ++at_;
    return true;
  }
  bool number(double& value) {
    // strtod wants a terminated string: the text up to the first byte no
    // number holds, and none strtod takes.
    std::string text(s_.substr(at_, s_.find_first_of(",} \t\r\"", at_) - at_));
    char* end = nullptr;
    value = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || !std::isfinite(value)) return fail("expected a value");
    at_ += static_cast<std::size_t>(end - text.c_str());
    return true;
  }
  bool hex4(unsigned& code) {
    if (at_ + 4 > s_.size()) return false;
    code = 0;
    for (char c : s_.substr(at_, 4)) {
      unsigned digit;
      if (c >= '0' && c <= '9')
        digit = static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f')
        digit = static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        digit = static_cast<unsigned>(c - 'A' + 10);
      else
        return false;
      code = code << 4 | digit;
    }
    at_ += 4;
    return true;
  }
  bool string(std::string& out) {
    if (!expect('"')) return false;
    out.clear();
    for (;;) {
      if (at_ >= s_.size()) return fail("unterminated string");
      char c = s_[at_++];
      if (c == '"') return true;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_ >= s_.size()) return fail("unterminated string");
      switch (char e = s_[at_++]) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case '"':
        case '\\':
        case '/': out += e; break;
        case 'u': {
          unsigned code;
          if (!hex4(code)) return fail("bad \\u escape");
          // json_string escapes control characters and stray bytes (a
          // byte that was not UTF-8, given back as it was) only.
          out += code < 0x100 ? static_cast<char>(code) : '?';
          break;
        }
        default: return fail("bad escape");
      }
    }
  }

  std::string_view s_;
  std::size_t at_ = 0;
  std::string why_;
};

}  // namespace

std::optional<FlatJson> FlatJson::parse(std::string_view line, std::string& why) {
  FlatJson object;
  FlatReader reader(line);
  if (!reader.read(object.strings_, object.numbers_)) {
    why = reader.why();
    return std::nullopt;
  }
  why.clear();
  return object;
}

std::optional<std::string> FlatJson::string(const std::string& key) const {
  auto it = strings_.find(key);
  if (it == strings_.end()) return std::nullopt;
  return it->second;
}

std::optional<double> FlatJson::number(const std::string& key) const {
  auto it = numbers_.find(key);
  if (it == numbers_.end()) return std::nullopt;
  return it->second;
}

}  // namespace tk
