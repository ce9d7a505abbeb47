#include "option_table.hpp"

#include <algorithm>

#include "cxxopts.hpp"

namespace tk {

void append(OptionTable& table, OptionTable more) {
  for (Option& option : more) table.push_back(std::move(option));
}

OptionTable without(OptionTable table, std::initializer_list<std::string_view> names) {
  std::erase_if(table, [&](const Option& option) {
    return std::find(names.begin(), names.end(), option.name) != names.end();
  });
  return table;
}

namespace {

// "-s size", "--tee OUT", "-h, --help", "--file=device".
std::string names_of(const Option& option, char separator) {
  std::string names;
  if (option.letter != '\0') names = std::string("-") + option.letter;
  if (!option.name.empty()) names += (names.empty() ? "--" : ", --") + option.name;
  if (!option.argument.empty())
    names += (option.name.empty() ? ' ' : separator) + option.argument;
  return names;
}

}  // namespace

std::string help_lines(const OptionTable& table, const HelpLayout& layout) {
  std::string out, names;
  for (const Option& option : table) {
    if (!option.listed) continue;
    names += (names.empty() ? "" : ", ") + names_of(option, layout.value_separator);
    if (option.help.empty()) continue;
    std::size_t width = option.letter != '\0' ? layout.letter_width : layout.long_width;
    std::string line = "  " + names + std::string(names.size() + 2 <= width ? width - names.size() : 2, ' ');
    for (char c : option.help) line += c == '\n' ? "\n" + std::string(2 + width, ' ') : std::string(1, c);
    out += line + "\n";
    names.clear();
  }
  return out;
}

GivenOptions read_options(const OptionTable& table, int argc, const char* const* argv) {
  cxxopts::Options spec(argc > 0 ? argv[0] : "");
  auto adder = spec.add_options();
  for (const Option& option : table) {
    std::string names = option.letter != '\0' ? std::string(1, option.letter) : "";
    if (!option.name.empty()) names += (names.empty() ? "" : ",") + option.name;
    if (option.argument.empty())
      adder(names, "", cxxopts::value<bool>());
    else
      adder(names, "", cxxopts::value<std::string>());
  }
  GivenOptions given;
  try {
    GetoptWords words(spec, argc, argv);
    cxxopts::ParseResult parsed = spec.parse(words.argc(), words.argv());
    for (const cxxopts::KeyValue& kv : parsed.arguments()) {
      // cxxopts keys an option by its long name when it has one.
      auto entry = std::find_if(table.begin(), table.end(), [&](const Option& option) {
        return option.name.empty() ? kv.key() == std::string(1, option.letter) : kv.key() == option.name;
      });
      given.options.emplace_back(&*entry, kv.value());
    }
    given.operands = parsed.unmatched();
  } catch (const cxxopts::exceptions::parsing& e) {
    throw_getopt_error(e);
  }
  return given;
}

void apply_options(const GivenOptions& given) {
  for (const auto& [option, value] : given.options) option->apply(value);
}

}  // namespace tk
