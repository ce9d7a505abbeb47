// A program's options written once: each entry's names, the name of its
// value, its --help words and what it does. The parser, the --help lines and
// (through --help) the test against the man page's SYNOPSIS all read it.
#pragma once

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tk {

struct Option {
  std::string name;      // the long name; empty: a letter only
  char letter = '\0';    // the short letter; '\0': a long name only
  std::string argument;  // the value's name in --help; empty: a flag
  // The --help words. A "\n" starts a continuation line; empty: the option
  // shares the next one's line ("--input-rate RATE, --output-rate RATE").
  std::string help;
  std::function<void(const std::string& value)> apply;  // a flag gets "true"
  bool listed = true;  // false: not in --help (buffer's -h, unknown to 1.19)
};

using OptionTable = std::vector<Option>;

// Appends the entries of more to table.
void append(OptionTable& table, OptionTable more);

// table without the entries named (long names).
OptionTable without(OptionTable table, std::initializer_list<std::string_view> names);

// Where --help puts the words: after the two-space indent, an option's
// names take `letter_width` columns (a long-only option `long_width`), and
// at least two spaces follow them.
struct HelpLayout {
  std::size_t letter_width = 12;
  std::size_t long_width = 12;
  char value_separator = ' ';  // between a long name and its value's name; mt: '='
};

// The lines --help prints for the listed entries, in the table's order.
std::string help_lines(const OptionTable& table, const HelpLayout& layout);

// A command line read by a table: the options in command-line order, each
// with its value, and the operands.
struct GivenOptions {
  std::vector<std::pair<const Option*, std::string>> options;
  std::vector<std::string> operands;
};

// Reads argv with cxxopts as getopt_long would (GetoptWords); a parse error
// is thrown as the UsageError getopt would word.
GivenOptions read_options(const OptionTable& table, int argc, const char* const* argv);

// Calls each given option's apply, in command-line order.
void apply_options(const GivenOptions& given);

}  // namespace tk
