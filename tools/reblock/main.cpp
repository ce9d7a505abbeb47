// reblock: turns any stream into records of exactly one size, for tape drives.
//
// Replaces `dd obs=N iflag=fullblock` (GNU coreutils dd, whose -t summary
// format it follows) and buffer 1.19's reblocking:
// every write is exactly -s bytes, the last one short unless -B pads it.
// Input and output are tapekit Tape names (file, pipe, st device, .tap image,
// host:path). Exit statuses (Exit in reblock.hpp): 0 done, 1 failed, 2 bad
// command line; on SIGINT/SIGTERM/SIGHUP it writes what it read, then dies by
// the signal.
// Deviations from dd: reblock(1), COMPATIBILITY.

#include "../common/run_main.hpp"
#include "../common/stop_signals.hpp"
#include "options.hpp"
#include "reblock.hpp"

int main(int argc, char** argv) {
  using tk::reblock::Exit;
  tk::ExitPolicy policy;
  policy.usage = static_cast<int>(Exit::usage);
  policy.failure = static_cast<int>(Exit::failure);
  policy.usage_text = tk::reblock::kUsageText;
  int status = tk::run_main("reblock", policy, [&] { return tk::reblock::run(argc, argv); });
  tk::die_by_stop_signal();
  return status;
}
