// reblock's run: opens the input and output, copies, and prints -t's
// summary; main.cpp maps its outcome to an exit status.
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

namespace tk::reblock {
namespace {
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
    if (options_.records) text += format_histogram(totals_);
    if (options_.totals) {
      std::chrono::duration<double> took = std::chrono::steady_clock::now() - start_;
      text += format_summary(totals_, took.count());
    }
    std::fwrite(text.data(), 1, text.size(), stderr);
  }

 private:
  const Options& options_;
  const Totals& totals_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

int run(int argc, char** argv) {
  CommandLine line = parse_command_line(argc, argv);
  const Options& options = line.options;
  if (line.help) {
    std::fputs(kUsageText, stdout);
    std::fputs(options_text().c_str(), stdout);
    return static_cast<int>(Exit::ok);
  }
  if (line.version) {
    std::fputs(tk::version_line("reblock").c_str(), stdout);
    return static_cast<int>(Exit::ok);
  }
  // A reader that went away shows as EPIPE, which run_main reports quietly.
  std::signal(SIGPIPE, SIG_IGN);
  tk::ignore_file_size_signal();
  tk::catch_stop_signals();

  // The input first: a missing input must not truncate the output.
  line.open_options.warn = [](const std::string& text) {
    std::string warning = "reblock: warning: " + text + "\n";
    std::fputs(warning.c_str(), stderr);
  };
  if (tk::output_is_input(options.input, options.output, line.open_options))
    throw tk::ExactExit(static_cast<int>(Exit::failure),
                        tk::output_is_input_text("reblock", "-o " + options.output));
  auto in = tk::open_tape(options.input, O_RDONLY, line.open_options);
  in->expect_sequential_reads();
  auto out = tk::open_tape(options.output, O_WRONLY | O_CREAT | O_TRUNC, line.open_options);
  for (int fd : {in->poll_fd(), out->poll_fd()})
    if (fd >= 0) tk::grow_pipe(fd, kPipeTarget);

  Totals totals;
  try {
    SummaryAtExit summary(options, totals);
    if (options.records)
      copy_records(*in, *out, options, totals);
    else
      copy_reblocked(*in, *out, options, totals);
    // Inside the summary's scope: the output may still be writing buffered
    // records, and the counts must show what a failure there lost.
    try {
      out->close();
    } catch (const tk::Error& e) {
      // A pipelined remote tape may only learn at the close that the medium
      // filled: the message must still say which records are on it.
      take_back_lost(e, *out, totals);
      throw tk::Error(e.errnum(), e.context() + reached_text(options, totals),
                      e.bytes_done());
    }
  } catch (const tk::Error& e) {
    // The reader of standard output went away (tar -t stops at the end of
    // the archive, head at its count): end as dd and cat do, whether the
    // pipe broke at a write or at the close, after -t's summary.
    if (e.errnum() == EPIPE && (options.output.empty() || options.output == "-"))
      tk::die_of_broken_pipe();
    throw;
  }
  in->close();
  return static_cast<int>(Exit::ok);
}

}  // namespace tk::reblock
