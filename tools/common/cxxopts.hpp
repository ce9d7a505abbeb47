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
#include <vector>

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

// The command line as cxxopts must see it to read it as getopt does. A value
// attached to a short option is split off, since cxxopts takes only letters
// and digits there and called "-o/dev/nst0" an invalid option -o. A value
// given to an option that takes none ("--verify=no") is refused in
// getopt_long's words, since cxxopts would parse it as a boolean and the
// tools count a flag given as set ("--no-drain=false" would discard the
// queue); so is an unknown letter in a group, named as getopt names it.
class GetoptWords {
 public:
  GetoptWords(cxxopts::Options& spec, int argc, const char* const* argv);
  GetoptWords(const GetoptWords&) = delete;  // pointers_ point into words_
  GetoptWords& operator=(const GetoptWords&) = delete;
  int argc() const { return static_cast<int>(pointers_.size()); }
  const char* const* argv() const { return pointers_.data(); }

 private:
  std::vector<std::string> words_;
  std::vector<const char*> pointers_;
};

}  // namespace tk
