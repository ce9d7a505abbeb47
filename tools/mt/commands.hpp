// The mt command table and its dispatcher.
#pragma once

#include <string>

#include "cmdline.hpp"

namespace tk::mt {

// mt-st's usage text; with explain, the command list wrapped as mt-st wraps it.
std::string usage_text(bool explain);

// `mt -h` and `mt --help`: mt-st's usage text with the command list, then
// what tapekit adds to mt-st (commands, options, device names).
std::string help_text();

// Looks up inv.command, opens the device as the command requires, runs it and
// returns the exit status. Failures throw tk::ExactExit with mt-st's text.
int run_command(const Invocation& inv);

}  // namespace tk::mt
