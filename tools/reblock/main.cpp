// reblock: turns any stream into records of exactly one size, for tape drives.
//
// Replaces `dd obs=N iflag=fullblock` (GNU coreutils dd, whose -t summary
// format it follows) and buffer 1.19's reblocking (buffer-reference.md §1):
// every write is exactly -s bytes, the last one short unless -B pads it.
// Input and output are tapekit Tape names (file, pipe, st device, .tap image,
// host:path). Exit statuses: 0 done, 1 failed, 2 bad command line; on
// SIGINT/SIGTERM/SIGHUP it writes what it read, then dies by the signal.
// Deviations from dd: the copy stops at the input's first filemark (tar's and
// dd's reading of "one tape file"), and bytes already read are written before
// a read error is reported.

#include "../common/cxxopts.hpp"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <initializer_list>

#include "../../lib/error.hpp"
#include "../../lib/io.hpp"
#include "../common/run_main.hpp"
#include "../../lib/size.hpp"
#include "../../lib/tape/tape.hpp"
#include "reblock.hpp"

namespace {

using tk::reblock::Options;
using tk::reblock::Totals;

enum class Exit : int { ok = 0, failure = 1, usage = 2 };

// Equal to the SYNOPSIS of man/reblock.1.
constexpr const char* usage_text =
    "usage: reblock [-Bhrt] [-i input] [-o output] [-s size] [--max-record size]\n"
    "               [--pad-byte byte] [--force-local] [--connect-timeout seconds]\n"
    "               [--plain-remote]\n";

// Pipes are grown to this size where the system allows, so a read or write
// of a large record is one system call rather than several.
constexpr std::size_t pipe_target = 1024 * 1024;

std::string dashed(const std::string& name) { return (name.size() == 1 ? "-" : "--") + name; }

// The remote options go straight into `remote`: only open_tape needs them.
Options parse_options(int argc, char** argv, bool& help, tk::OpenOptions& remote) {
  cxxopts::Options spec("reblock");
  spec.add_options()
      ("B", "pad the last record")
      ("h,help", "usage")
      ("i", "input", cxxopts::value<std::string>()->default_value("-"))
      ("o", "output", cxxopts::value<std::string>()->default_value("-"))
      ("r", "copy records, report sizes")
      ("s", "record size", cxxopts::value<std::string>())
      ("t", "print totals")
      ("max-record", "largest input record", cxxopts::value<std::string>())
      ("pad-byte", "pad byte", cxxopts::value<std::string>())
      ("force-local", "names with a colon are local files")
      ("connect-timeout", "seconds a host:path may stay silent", cxxopts::value<std::string>())
      ("plain-remote", "host:x.tap may be a plain file there");
  Options options;
  try {
    auto result = spec.parse(argc, argv);
    if (!result.unmatched().empty())
      throw tk::UsageError("unexpected operand '" + result.unmatched().front() + "'");
    help = result.count("h") > 0;
    options.pad = result.count("B") > 0;
    options.records = result.count("r") > 0;
    options.totals = result.count("t") > 0;
    options.force_local = result.count("force-local") > 0;
    remote.plain_remote = result.count("plain-remote") > 0;
    if (result.count("connect-timeout"))
      remote.connect_timeout = static_cast<int>(tk::parse_count(
          result["connect-timeout"].as<std::string>(), "--connect-timeout", 0, 86400));
    // A second -i or -o is a slip (which one was meant?), not an override.
    for (const char* name : {"i", "o"})
      if (result.count(name) > 1) throw tk::UsageError(std::string("-") + name + " given twice");
    options.input = result["i"].as<std::string>();
    options.output = result["o"].as<std::string>();
    // 1 GiB bounds the buffers reblock allocates for one record.
    constexpr std::uint64_t max_size = std::uint64_t{1} << 30;
    if (result.count("s")) {
      options.size = tk::parse_size(result["s"].as<std::string>(), "record size", max_size);
      if (options.size == 0) throw tk::UsageError("invalid record size '0': must be at least 1");
    }
    if (result.count("max-record")) {
      options.max_record =
          tk::parse_size(result["max-record"].as<std::string>(), "--max-record", max_size);
      if (options.max_record == 0)
        throw tk::UsageError("invalid --max-record '0': must be at least 1");
    }
    if (result.count("pad-byte"))
      options.pad_byte = static_cast<std::byte>(
          tk::parse_count(result["pad-byte"].as<std::string>(), "--pad-byte", 0, 255));
  } catch (const cxxopts::exceptions::no_such_option& e) {
    throw tk::UsageError("unknown option " + dashed(tk::cxxopts_option_name(e.what())));
  } catch (const cxxopts::exceptions::missing_argument& e) {
    throw tk::UsageError("option " + dashed(tk::cxxopts_option_name(e.what())) + " needs a value");
  } catch (const cxxopts::exceptions::option_requires_argument& e) {
    throw tk::UsageError("option " + dashed(tk::cxxopts_option_name(e.what())) + " needs a value");
  } catch (const cxxopts::exceptions::invalid_option_syntax& e) {
    throw tk::UsageError("invalid option '" + tk::cxxopts_option_name(e.what()) + "'");
  } catch (const cxxopts::exceptions::parsing& e) {
    throw tk::UsageError(e.what());
  }
  return options;
}

// The signal (SIGINT, SIGTERM, SIGHUP) that asked reblock to stop; once it
// has written what it read, reblock dies by it, so callers see the signal.
volatile std::sig_atomic_t stop_signal = 0;

extern "C" void on_stop_signal(int signal_number) {
  stop_signal = signal_number;
  tk::request_stop();
}

// Without SA_RESTART, so that a read or write blocked on a slow pipe or a
// tape returns EINTR and the copy can end tidily.
void catch_stop_signals() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(signal_number, &action, nullptr);
}

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
  bool help = false;
  tk::OpenOptions open_options;
  Options options = parse_options(argc, argv, help, open_options);
  if (help) {
    std::fputs(usage_text, stdout);
    return static_cast<int>(Exit::ok);
  }
  // A reader that went away shows as EPIPE, which run_main reports quietly.
  std::signal(SIGPIPE, SIG_IGN);
  catch_stop_signals();

  // The input first: a missing input must not truncate the output.
  open_options.force_local = options.force_local;
  auto in = tk::open_tape(options.input, O_RDONLY, open_options);
  auto out = tk::open_tape(options.output, O_WRONLY | O_CREAT | O_TRUNC, open_options);
  for (int fd : {in->poll_fd(), out->poll_fd()})
    if (fd >= 0) tk::grow_pipe(fd, pipe_target);

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
      tk::reblock::take_back_lost(e, totals);
      throw;
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
  policy.usage_text = usage_text;
  int status = tk::run_main("reblock", policy, [&] { return run(argc, argv); });
  if (stop_signal != 0) {
    std::signal(stop_signal, SIG_DFL);
    std::raise(stop_signal);
  }
  return status;
}
