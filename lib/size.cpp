// Size and count parsing: one set of suffix rules for every tool.
#include "size.hpp"

#include <cctype>
#include <charconv>
#include <string>

#include "error.hpp"

namespace tk {
namespace {

[[noreturn]] void reject(std::string_view what, std::string_view text, std::string_view why) {
  throw UsageError("invalid " + std::string(what) + " '" + std::string(text) + "': " +
                   std::string(why));
}

bool equals_folded(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
  return true;
}

std::uint64_t unit_multiplier(std::string_view unit) {
  if (unit.empty()) return 1;
  if (equals_folded(unit, "b")) return 512;
  static constexpr struct {
    char letter;
    unsigned shift;
  } units[] = {{'k', 10}, {'m', 20}, {'g', 30}, {'t', 40}};
  char first = static_cast<char>(std::tolower(static_cast<unsigned char>(unit[0])));
  for (auto u : units) {
    if (u.letter != first) continue;
    std::string_view rest = unit.substr(1);
    if (rest.empty() || equals_folded(rest, "b") || equals_folded(rest, "ib"))
      return std::uint64_t{1} << u.shift;
  }
  return 0;
}

// "1.5k": a fraction, which no size option takes. Says what it is in bytes
// when that is a whole number, so the fix is one copy away.
[[noreturn]] void reject_fraction(std::string_view what, std::string_view text,
                                  std::uint64_t whole, std::string_view rest) {
  std::size_t digits_end = 1;
  while (digits_end < rest.size() && std::isdigit(static_cast<unsigned char>(rest[digits_end])))
    ++digits_end;
  std::string_view fraction = rest.substr(1, digits_end - 1);
  std::uint64_t multiplier = unit_multiplier(rest.substr(digits_end));
  std::string why = "a size is a whole number, without a fraction";
  if (multiplier > 1 && !fraction.empty() && fraction.size() <= 6) {
    std::uint64_t scale = 1, numerator = 0;
    for (char c : fraction) {
      scale *= 10;
      numerator = numerator * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (whole <= UINT64_MAX / multiplier / scale && (numerator * multiplier) % scale == 0)
      why += ": " + std::string(text) + " is " +
             std::to_string(whole * multiplier + numerator * multiplier / scale);
  }
  reject(what, text, why);
}

}  // namespace

std::uint64_t parse_size(std::string_view text, std::string_view what, std::uint64_t max) {
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (end == text.data()) reject(what, text, "not a number");
  if (ec == std::errc::result_out_of_range) reject(what, text, "too large");
  std::string_view unit = text.substr(static_cast<std::size_t>(end - text.data()));
  if (!unit.empty() && unit[0] == '.') reject_fraction(what, text, value, unit);
  std::uint64_t multiplier = unit_multiplier(unit);
  if (multiplier == 0) reject(what, text, "unknown unit (use b, k, m, g or t)");
  if (value > max / multiplier) reject(what, text, "too large");
  return value * multiplier;
}

std::int64_t parse_count(std::string_view text, std::string_view what, std::int64_t min,
                         std::int64_t max) {
  std::string_view digits = text;
  if (!digits.empty() && digits[0] == '+') digits.remove_prefix(1);
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (end == digits.data() || end != digits.data() + digits.size())
    reject(what, text, "not a whole number");
  if (ec == std::errc::result_out_of_range || value < min || value > max)
    reject(what, text, "out of range");
  return value;
}

}  // namespace tk
