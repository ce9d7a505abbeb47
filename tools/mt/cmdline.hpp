// mt's command line, scanned by mt-st 1.7's rules (not getopt's).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "../../lib/tape/tape.hpp"

namespace tk::mt {

// mt-st's exit statuses (docs/tape-semantics.md, "mt's exit statuses").
enum class Exit : int {
  ok = 0,
  usage = 1,   // usage errors, unknown command, bad count sign, open failure
  device = 2,  // the device refused the operation
  count = 3,   // count with a bad unit or too large
};

inline constexpr const char* default_device = "/dev/tape";

struct Invocation {
  bool show_version = false;
  bool show_help = false;  // --help: the -h text on stdout
  std::string device;
  std::string command;
  std::vector<std::string> args;
  bool json = false;
  std::optional<std::string> fail_on;  // --fail-on, for tapealert
  tk::OpenOptions open_options;
};

// Scans argv as mt-st does. -h and usage errors throw tk::ExactExit carrying
// mt-st's text and status (-h adds tapekit's extensions after it).
Invocation parse_command_line(int argc, char** argv);

// The lines -h and --help print for tapekit's options, from the option table.
std::string option_lines();

// `mt -v`: mt-st's two lines, then tapekit's version line.
std::string version_text();

}  // namespace tk::mt
