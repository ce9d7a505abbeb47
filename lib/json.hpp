// JSON as the programs write it (objects and arrays built a value at a time,
// in order) and as buffer reads its --record lines back (flat objects, one
// a line).
#pragma once

#include <concepts>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace tk {

// value with exactly `decimals` digits after the point, as printf's "%.*f".
std::string json_fixed(double value, int decimals);

template <class T>
concept JsonInteger = std::integral<T> && !std::same_as<T, bool>;

// An object, its fields in the order they are added. Strings go through
// json_string, so any bytes make valid JSON.
class JsonObject {
 public:
  JsonObject& string(std::string_view key, std::string_view value);
  JsonObject& integer(std::string_view key, JsonInteger auto value) {
    return raw(key, std::to_string(value));
  }
  JsonObject& fixed(std::string_view key, double value, int decimals);
  JsonObject& boolean(std::string_view key, bool value);
  JsonObject& null(std::string_view key);
  // json as it is: an object or array already written (JsonObject::text,
  // JsonArray::text).
  JsonObject& raw(std::string_view key, std::string_view json);

  // "{...}"
  std::string text() const { return text_ + "}"; }
  // The object and a newline: a line of a JSON lines stream.
  std::string line() const { return text_ + "}\n"; }

 private:
  std::string text_ = "{";
};

// An array, its values in the order they are added.
class JsonArray {
 public:
  JsonArray& string(std::string_view value);
  JsonArray& integer(JsonInteger auto value) { return raw(std::to_string(value)); }
  JsonArray& raw(std::string_view json);

  std::string text() const { return text_ + "]"; }

 private:
  std::string text_ = "[";
};

// One flat JSON object on a line, as buffer's --record file holds them:
// string, number, true and false values, no nesting, no null. Read as
// leniently as buffer always read its records (strtod numbers, white space
// but for line feeds), and refused, never half read, when malformed.
class FlatJson {
 public:
  // The object that is the whole of line, or nullopt with why it is not in
  // `why` ("expected ':'", "unterminated string", "text after the object").
  static std::optional<FlatJson> parse(std::string_view line, std::string& why);

  // key's string value, with its escapes undone: \u00XX gives the byte XX
  // back (json_string's rule); a code above U+00FF reads as '?'.
  std::optional<std::string> string(const std::string& key) const;
  // key's number; true is 1, false 0.
  std::optional<double> number(const std::string& key) const;

 private:
  std::map<std::string, std::string> strings_;
  std::map<std::string, double> numbers_;
};

}  // namespace tk
