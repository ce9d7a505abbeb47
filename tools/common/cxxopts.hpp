// cxxopts as the tools use it: one include with the same configuration, and
// its errors in getopt's words, as every tool prints them. Tools only: lib/
// never sees cxxopts.
#pragma once

// cxxopts' own option scanner instead of std::regex: smaller, faster to
// start, and free of GCC 12's false -Wmaybe-uninitialized in <regex> at -O1.
#ifndef CXXOPTS_NO_REGEX
#define CXXOPTS_NO_REGEX 1
#endif
#include <cxxopts.hpp>

#include <string>

namespace tk {

// The option cxxopts complains about: the text between its LQUOTE and
// RQUOTE, or the whole message when it names none.
inline std::string cxxopts_option_name(const std::string& message) {
  auto open = message.find(cxxopts::LQUOTE);
  if (open == std::string::npos) return message;
  open += cxxopts::LQUOTE.size();
  auto close = message.find(cxxopts::RQUOTE, open);
  if (close == std::string::npos) return message;
  return message.substr(open, close - open);
}

// Rethrows a cxxopts parse error as the UsageError glibc's getopt would word
// it ("invalid option -- 'x'", "option requires an argument -- 's'",
// "unrecognized option '--foo'"), the words the replaced programs print.
[[noreturn]] void throw_getopt_error(const cxxopts::exceptions::parsing& e);

}  // namespace tk
