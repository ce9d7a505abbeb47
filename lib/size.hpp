// Strict parsing of sizes ("32k", "1m", "2b") and counts from the command line.
#pragma once

#include <cstdint>
#include <string_view>

namespace tk {

// A byte size: decimal digits, then an optional unit, case-insensitive:
// b = 512 (buffer 1.19's rule), k = 2^10, m = 2^20, g = 2^30, t = 2^40; after
// k/m/g/t a trailing "b" or "ib" is accepted ("4kb", "4KiB"). Anything else,
// or a value above max, throws UsageError naming `what` and the text.
std::uint64_t parse_size(std::string_view text, std::string_view what,
                         std::uint64_t max = UINT64_MAX);

// A whole decimal number, optionally signed, within [min, max].
std::int64_t parse_count(std::string_view text, std::string_view what,
                         std::int64_t min = INT64_MIN, std::int64_t max = INT64_MAX);

}  // namespace tk
