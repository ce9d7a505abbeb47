// reblock's options: cxxopts, with its errors in getopt's words.
#include "options.hpp"

#include <initializer_list>

#include "../../lib/error.hpp"
#include "../../lib/rmt/protocol.hpp"
#include "../../lib/size.hpp"
#include "../common/cxxopts.hpp"

namespace tk::reblock {

// Equal to the SYNOPSIS of man/reblock.1.
const char* const kUsageText =
    "usage: reblock [-Bhrt] [-i input] [-o output] [-s size] [--max-record size]\n"
    "               [--pad-byte byte] [--rsh-command command] [--rmt-command command]\n"
    "               [--force-local] [--connect-timeout seconds] [--open-timeout seconds]\n"
    "               [--plain-remote] [--streams count | auto]\n";

const char* const kOptionsText =
    "\n"
    "  -B          pad the last record to the full size (with --pad-byte's byte)\n"
    "  -h, --help  print this text on standard output and exit\n"
    "  -i input    read from input instead of standard input\n"
    "  -o output   write to output instead of standard output\n"
    "  -r          copy record by record; print how many records of each size\n"
    "  -s size     bytes in each record written (default 10240, at most 1g)\n"
    "  -t          print dd's totals on standard error when the copy ends\n"
    "  --max-record size        largest record read from a tape (default 1m)\n"
    "  --pad-byte byte          the value 0..255 -B pads with (default 0)\n"
    "  --rsh-command command    the remote shell for host:path (default $RSH, else ssh)\n"
    "  --rmt-command command    the program it starts there (default $RMT, else /etc/rmt)\n"
    "  --force-local            a name with a colon is a local file, not host:path\n"
    "  --connect-timeout seconds  give up on a silent host:path (default 30; 0: wait)\n"
    "  --open-timeout seconds     give up on a host:path device that does not open (0: wait)\n"
    "  --plain-remote           host:x.tap may be a plain file where rmt is not tapekit's\n"
    "  --streams count|auto     remote shells joined into one session to a host:path\n"
    "  --version                print the version and exit\n"
    "Input and output may be files, pipes, tape devices, virtual tapes (made by\n"
    "mt vt-create, or named by $TAPEKIT_VIRTUAL_TAPES) or [user@]host:path; sizes\n"
    "take the suffixes b (512), k, m, g.\n";

namespace {

// 1 GiB bounds the buffers reblock allocates for one record.
constexpr std::uint64_t kMaxRecordSize = std::uint64_t{1} << 30;

}  // namespace

CommandLine parse_command_line(int argc, char** argv) {
  cxxopts::Options spec("reblock");
  spec.add_options()
      ("B", "pad the last record")
      ("h,help", "usage")
      ("version", "version")
      ("i", "input", cxxopts::value<std::string>()->default_value("-"))
      ("o", "output", cxxopts::value<std::string>()->default_value("-"))
      ("r", "copy records, report sizes")
      ("s", "record size", cxxopts::value<std::string>())
      ("t", "print totals")
      ("max-record", "largest input record", cxxopts::value<std::string>())
      ("pad-byte", "pad byte", cxxopts::value<std::string>())
      ("rsh-command", "remote shell", cxxopts::value<std::string>())
      ("rmt-command", "remote rmt", cxxopts::value<std::string>())
      ("force-local", "names with a colon are local files")
      ("connect-timeout", "seconds a host:path may stay silent", cxxopts::value<std::string>())
      ("open-timeout", "seconds a host:path device may take to open", cxxopts::value<std::string>())
      ("plain-remote", "host:x.tap may be a plain file there")
      ("streams", "remote shells to a host:path", cxxopts::value<std::string>());
  CommandLine line;
  Options& options = line.options;
  OpenOptions& remote = line.open_options;
  try {
    GetoptWords words(spec, argc, argv);
    auto result = spec.parse(words.argc(), words.argv());
    if (!result.unmatched().empty())
      throw UsageError("unexpected operand '" + result.unmatched().front() + "'");
    line.help = result.count("h") > 0;
    line.version = result.count("version") > 0;
    options.pad = result.count("B") > 0;
    options.records = result.count("r") > 0;
    options.totals = result.count("t") > 0;
    options.force_local = result.count("force-local") > 0;
    remote.plain_remote = result.count("plain-remote") > 0;
    if (result.count("rsh-command")) remote.rsh_command = result["rsh-command"].as<std::string>();
    if (result.count("rmt-command")) remote.rmt_command = result["rmt-command"].as<std::string>();
    if (result.count("streams")) {
      std::string streams = result["streams"].as<std::string>();
      remote.streams = streams == "auto" ? 0
                                         : static_cast<int>(parse_count(streams, "--streams", 1,
                                                                        rmt::max_streams));
    }
    if (result.count("connect-timeout"))
      remote.connect_timeout = static_cast<int>(parse_count(
          result["connect-timeout"].as<std::string>(), "--connect-timeout", 0, max_connect_timeout));
    if (result.count("open-timeout"))
      remote.open_timeout = static_cast<int>(parse_count(
          result["open-timeout"].as<std::string>(), "--open-timeout", 0, max_connect_timeout));
    // A second -i or -o is a slip (which one was meant?), not an override.
    for (const char* name : {"i", "o"})
      if (result.count(name) > 1) throw UsageError(std::string("-") + name + " given twice");
    options.input = result["i"].as<std::string>();
    options.output = result["o"].as<std::string>();
    if (result.count("s")) {
      options.size = parse_size(result["s"].as<std::string>(), "record size", kMaxRecordSize);
      if (options.size == 0) throw UsageError("invalid record size '0': must be at least 1");
    }
    if (result.count("max-record")) {
      options.max_record =
          parse_size(result["max-record"].as<std::string>(), "--max-record", kMaxRecordSize);
      if (options.max_record == 0) throw UsageError("invalid --max-record '0': must be at least 1");
    }
    if (result.count("pad-byte"))
      options.pad_byte = static_cast<std::byte>(
          parse_count(result["pad-byte"].as<std::string>(), "--pad-byte", 0, 255));
  } catch (const cxxopts::exceptions::parsing& e) {
    throw_getopt_error(e);
  }
  return line;
}

}  // namespace tk::reblock
