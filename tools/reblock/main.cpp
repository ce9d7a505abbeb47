// reblock: turns any stream into records of exactly one size, for tape drives.
//
// Replaces `dd obs=N iflag=fullblock` (GNU coreutils dd, whose -t summary
// format it follows) and buffer 1.19's reblocking (buffer-reference.md §1):
// every write is exactly -s bytes, the last one short unless -B pads it.
// Input and output are tapekit Tape names (file, pipe, st device, .tap image,
// host:path). Exit statuses (Exit in reblock.hpp): 0 done, 1 failed, 2 bad
// command line; on SIGINT/SIGTERM/SIGHUP it writes what it read, then dies by
// the signal.
// Deviations from dd: the copy stops at the input's first filemark (tar's and
// dd's reading of "one tape file"), and bytes already read are written before
// a read error is reported.

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fcntl.h>

#include "../../lib/error.hpp"
#include "../../lib/io.hpp"
#include "../../lib/tape/tape.hpp"
#include "../common/run_main.hpp"
#include "../common/same_file.hpp"
#include "../common/stop_signals.hpp"
#include "../common/version.hpp"
#include "options.hpp"
#include "reblock.hpp"

namespace {

using tk::reblock::Exit;
using tk::reblock::Options;
using tk::reblock::Totals;

// Pipes are grown to this size where the system allows, so a read or write
// of a large record is one system call rather than several.
constexpr std::size_t kPipeTarget = 1024 * 1024;

// Prints -t's summary when the copy ends, also when it ends in an error.
class SummaryAtExit {
 public:
  SummaryAtExit(const Options& options, const Totals& totals)
      : options_(options), totals_(totals), start_(std::chrono::steady_clock::now()) {}
  SummaryAtExit(const SummaryAtExit&) = delete;
  SummaryAtExit& operator=(const SummaryAtExit&) = delete;
  ~SummaryAtExit() {
    std::string text;
    if (options_.records) text += tk::reblock::format_histogram(totals_);
    if (options_.totals) {
      std::chrono::duration<double> took = std::chrono::steady_clock::now() - start_;
      text += tk::reblock::format_summary(totals_, took.count());
    }
    std::fwrite(text.data(), 1, text.size(), stderr);
  }

 private:
  const Options& options_;
  const Totals& totals_;
  std::chrono::steady_clock::time_point start_;
};

int run(int argc, char** argv) {
  tk::reblock::CommandLine line = tk::reblock::parse_command_line(argc, argv);
  const Options& options = line.options;
  if (line.help) {
    std::fputs(tk::reblock::kUsageText, stdout);
    std::fputs(tk::reblock::kOptionsText, stdout);
    return static_cast<int>(Exit::ok);
  }
  if (line.version) {
    std::fputs(tk::version_line("reblock").c_str(), stdout);
    return static_cast<int>(Exit::ok);
  }
  // A reader that went away shows as EPIPE, which run_main reports quietly.
  std::signal(SIGPIPE, SIG_IGN);
  tk::catch_stop_signals();

  // The input first: a missing input must not truncate the output.
  line.open_options.force_local = options.force_local;
  line.open_options.warn = [](const std::string& text) {
    std::string warning = "reblock: warning: " + text + "\n";
    std::fputs(warning.c_str(), stderr);
  };
  if (tk::output_is_input(options.input, options.output, line.open_options))
    throw tk::ExactExit(static_cast<int>(Exit::failure),
                        tk::output_is_input_text("reblock", "-o", options.output));
  auto in = tk::open_tape(options.input, O_RDONLY, line.open_options);
  in->expect_sequential_reads();
  auto out = tk::open_tape(options.output, O_WRONLY | O_CREAT | O_TRUNC, line.open_options);
  for (int fd : {in->poll_fd(), out->poll_fd()})
    if (fd >= 0) tk::grow_pipe(fd, kPipeTarget);

  Totals totals;
  {
    SummaryAtExit summary(options, totals);
    if (options.records)
      tk::reblock::copy_records(*in, *out, options, totals);
    else
      tk::reblock::copy_reblocked(*in, *out, options, totals);
    // Inside the summary's scope: the output may still be writing buffered
    // records, and the counts must show what a failure there lost.
    try {
      out->close();
    } catch (const tk::Error& e) {
      // A pipelined remote tape may only learn at the close that the medium
      // filled: the message must still say which records are on it.
      tk::reblock::take_back_lost(e, totals);
      throw tk::Error(e.errnum(), e.context() + tk::reblock::reached_text(options, totals),
                      e.bytes_done());
    }
  }
  in->close();
  return static_cast<int>(Exit::ok);
}

}  // namespace

int main(int argc, char** argv) {
  tk::ExitPolicy policy;
  policy.usage = static_cast<int>(Exit::usage);
  policy.failure = static_cast<int>(Exit::failure);
  policy.usage_text = tk::reblock::kUsageText;
  int status = tk::run_main("reblock", policy, [&] { return run(argc, argv); });
  tk::die_by_stop_signal();
  return status;
}
