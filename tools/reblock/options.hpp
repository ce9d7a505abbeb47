// reblock's command line.
#pragma once

#include "../../lib/tape/tape.hpp"
#include "reblock.hpp"

namespace tk::reblock {

// What the command line asks for; the remote options go straight into
// open_options, since only open_tape needs them.
struct CommandLine {
  Options options;
  OpenOptions open_options;
  bool help = false;     // -h, --help
  bool version = false;  // --version
};

// Parses argv; throws UsageError (getopt's words for option errors).
CommandLine parse_command_line(int argc, char** argv);

// The usage lines (man/reblock.1's SYNOPSIS), printed after a usage error;
// --help prints them and then the options text.
extern const char* const kUsageText;
std::string options_text();

}  // namespace tk::reblock
