#include "cxxopts.hpp"

#include <set>

#include "../../lib/error.hpp"

namespace tk {

void throw_getopt_error(const cxxopts::exceptions::parsing& e) {
  std::string name = cxxopts_option_name(e.what());
  std::string dashed = name.size() == 1 ? "-- '" + name + "'" : "'--" + name + "'";
  if (dynamic_cast<const cxxopts::exceptions::no_such_option*>(&e))
    throw UsageError(name.size() == 1 ? "invalid option " + dashed
                                      : "unrecognized option " + dashed);
  if (dynamic_cast<const cxxopts::exceptions::invalid_option_syntax*>(&e)) {
    // "-?" and the like: to getopt, an unknown option letter.
    std::string letters = name.substr(name.find_first_not_of('-') == std::string::npos
                                          ? name.size()
                                          : name.find_first_not_of('-'));
    throw UsageError(letters.empty() ? "invalid option -- '" + name + "'"
                                     : "invalid option -- '" + letters.substr(0, 1) + "'");
  }
  if (dynamic_cast<const cxxopts::exceptions::missing_argument*>(&e) ||
      dynamic_cast<const cxxopts::exceptions::option_requires_argument*>(&e))
    throw UsageError(name.size() == 1 ? "option requires an argument " + dashed
                                      : "option " + dashed + " requires an argument");
  throw UsageError(e.what());
}

// getopt_long takes any unambiguous abbreviation of a long option
// ("--next" for "--next-volume") and scripts use them; cxxopts takes only
// whole names. An exact name wins over the longer names it begins.
static std::string unabbreviated(const std::set<std::string>& long_names,
                                 const std::string& name) {
  if (name.empty() || long_names.count(name)) return name;
  std::vector<std::string> candidates;
  for (auto it = long_names.lower_bound(name);
       it != long_names.end() && it->compare(0, name.size(), name) == 0; ++it)
    candidates.push_back(*it);
  if (candidates.size() == 1) return candidates.front();
  if (candidates.empty()) return name;  // cxxopts says "unrecognized option"
  std::string possibilities;
  for (const std::string& candidate : candidates) possibilities += " '--" + candidate + "'";
  throw UsageError("option '--" + name + "' is ambiguous; possibilities:" + possibilities);
}

GetoptWords::GetoptWords(cxxopts::Options& spec, int argc, const char* const* argv) {
  std::set<std::string> flags, valued;  // long names; short ones as one letter
  std::set<std::string> long_names;
  for (const std::string& group : spec.groups())
    for (const cxxopts::HelpOptionDetails& option : spec.group_help(group).options) {
      std::set<std::string>& kind = option.is_boolean ? flags : valued;
      if (!option.s.empty()) kind.insert(option.s);
      kind.insert(option.l.begin(), option.l.end());
      long_names.insert(option.l.begin(), option.l.end());
    }
  // The words are walked as getopt walks them, so that a value that looks
  // like an option ("-o --json=1", a file name) is passed on whole.
  int i = 0;
  if (argc > 0) words_.emplace_back(argv[i++]);
  for (; i < argc; ++i) {
    std::string word = argv[i];
    if (word == "--") break;
    if (word.size() > 2 && word.compare(0, 2, "--") == 0) {
      std::size_t equals = word.find('=');
      std::string name = word.substr(2, equals == std::string::npos ? word.npos : equals - 2);
      std::string full = unabbreviated(long_names, name);
      if (full != name) {
        word = "--" + full + (equals == std::string::npos ? "" : word.substr(equals));
        name = full;
      }
      if (equals != std::string::npos && flags.count(name))
        throw UsageError("option '--" + name + "' doesn't allow an argument");
      words_.push_back(word);
      if (equals == std::string::npos && valued.count(name) && i + 1 < argc)
        words_.emplace_back(argv[++i]);
      continue;
    }
    if (word.size() < 2 || word[0] != '-') {
      words_.push_back(word);
      continue;
    }
    std::size_t j = 1;
    for (; j < word.size(); ++j) {
      std::string letter(1, word[j]);
      if (valued.count(letter)) break;
      if (!flags.count(letter)) throw UsageError("invalid option -- '" + letter + "'");
    }
    if (j + 1 >= word.size()) {
      // Flags only, or a valued letter last: its value is the next word.
      words_.push_back(word);
      if (j < word.size() && i + 1 < argc) words_.emplace_back(argv[++i]);
    } else {
      words_.push_back(word.substr(0, j + 1));
      words_.push_back(word.substr(j + 1));
    }
  }
  for (; i < argc; ++i) words_.emplace_back(argv[i]);
  for (const std::string& word : words_) pointers_.push_back(word.c_str());
}

}  // namespace tk
