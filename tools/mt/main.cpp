// mt: magnetic tape control, a drop-in for mt-st 1.7 (Debian's default mt).
//
// Reference: docs/tape-semantics.md, "mt" (mt-st's command line, count
// parsers and exit statuses), and mt(1) for the commands, messages and
// status formats, all as mt-st 1.7 has them. Messages that scripts may read are mt-st's words, with its
// hard-coded "mt:" prefix and perror(device) lines.
//
// Deviations from mt-st 1.7, where tapekit follows mt-st 1.8 (February 2025):
//  - after a failed weof/wset, "The tape is write-protected." is printed only
//    when the tape is write-protected (1.7 tests the bit the wrong way round);
//  - 1.8's density names (status, densities), plus LTO-10, which 1.8 lacks;
//    TAPEKIT_MT_DENSITY_TABLE=1.7 prints 1.7's for scripts that parse them;
//  - the driver option weof-no-wait (MT_ST_NOWAIT_EOF);
//  - names [user@]host:path reach a remote drive through rmt, with
//    --rsh-command and --rmt-command (words mt-st rejects as usage errors);
//  - --json status prints one JSON object;
//  - drive health on st drives (SG_IO on the st node), remote drives behind
//    tapekit's rmt and virtual tapes: tapealert [--fail-on
//    critical|warning], capacity, cartridge, encryption and health (--json:
//    one object), matched only when typed in full;
//  - virtual tapes (*.tap): vt-create, vt-protect, vt-alert and verify, which match only
//    when typed in full, so every abbreviation mt-st accepts means the same;
//  - -h lists these extensions after mt-st's usage, --help prints the same on
//    standard output and exits 0 (mt-st: short usage, exit 1), and -v adds
//    tapekit's version line after mt-st's two;
//  - output that cannot be written to stdout exits 2 (run_main's check);
//    mt-st ignores printf's failure and exits 0.
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
