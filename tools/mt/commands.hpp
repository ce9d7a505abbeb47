// The mt command table and its dispatcher.
#pragma once

#include <string>

#include "cmdline.hpp"

namespace mt {

// mt-st's usage text; with explain, the command list wrapped as mt-st wraps it.
std::string usage_text(bool explain);

// Looks up inv.command, opens the device as the command requires, runs it and
// returns the exit status. Failures throw tk::ExactExit with mt-st's text.
int run_command(const Invocation& inv);

}  // namespace mt
