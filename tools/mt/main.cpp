// mt: magnetic tape control, a drop-in for mt-st 1.7 (Debian's default mt).
//
// Reference: docs/tape-semantics.md, "mt" (mt-st's command line, count
// parsers and exit statuses), and mt(1) for the commands, messages and
// status formats, all as mt-st 1.7 has them. Messages that scripts may read are mt-st's words, with its
// hard-coded "mt:" prefix and perror(device) lines.
//
// Deviations from mt-st 1.7: mt(1), HISTORY (and COMPATIBILITY for the density names).
#include <iostream>

#include "../common/run_main.hpp"
#include "../common/stop_signals.hpp"
#include "cmdline.hpp"
#include "commands.hpp"

int main(int argc, char** argv) {
  using tk::mt::Exit;
  tk::ExitPolicy policy;
  policy.usage = static_cast<int>(Exit::usage);
  policy.failure = static_cast<int>(Exit::device);
  return tk::run_main("mt", policy, [&] {
    tk::mt::Invocation inv = tk::mt::parse_command_line(argc, argv);
    if (inv.show_version) {
      std::cout << tk::mt::version_text();
      return static_cast<int>(Exit::ok);
    }
    if (inv.show_help) {
      std::cout << tk::mt::help_text();
      return static_cast<int>(Exit::ok);
    }
    // A filemark written to an image at the size limit fails with EFBIG.
    tk::ignore_file_size_signal();
    return tk::mt::run_command(inv);
  });
}
