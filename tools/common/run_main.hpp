// run_main: the one catch site of every tool, mapping failures to exit statuses.
// It prints, so it lives beside the tools, not in the library.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace tk {

struct ExitPolicy {
  int usage = 1;    // UsageError and option-parser errors
  int failure = 1;  // Error and anything unexpected
  // Printed on stderr after a usage error message; empty for none.
  std::string usage_text;
};

// Sets the program name, runs body and returns its status. Maps UsageError,
// Error (EPIPE on output is quiet: a reader that went away is normal in a
// pipeline; so is Interrupted, which follows a stop request), ExactExit and
// any other exception to a diagnostic on stderr and the policy's status. Flushes stdout and fails if that flush fails.
int run_main(std::string_view program, const ExitPolicy& policy,
             const std::function<int()>& body);

// The name set by run_main ("buffer"), for diagnostics.
const std::string& program_name();

}  // namespace tk
