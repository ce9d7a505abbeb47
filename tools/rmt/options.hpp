// rmt's command line.
#pragma once

#include "server.hpp"

namespace tk::rmt_server {

// Parses argv; throws UsageError. Bare words are ignored with a warning on
// stderr, except beside restrictions, where they are a usage error.
ServerOptions parse_options(int argc, char** argv);

// The usage lines (man/rmt.8's SYNOPSIS), printed after a usage error;
// --help prints them and then the options text.
extern const char* const kUsageText;
extern const char* const kOptionsText;

}  // namespace tk::rmt_server
