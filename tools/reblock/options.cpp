// reblock's options: one table for the parser (cxxopts, with its errors in
// getopt's words) and --help.
#include "options.hpp"

#include <cstdint>

#include "../../lib/error.hpp"
#include "../../lib/size.hpp"
#include "../common/option_table.hpp"
#include "../common/remote_options.hpp"

namespace tk::reblock {

// Equal to the SYNOPSIS of man/reblock.1.
const char* const kUsageText =
    "usage: reblock [-Bhrt] [-i input] [-o output] [-s size] [--max-record size]\n"
    "               [--pad-byte byte] [--rsh-command command] [--rmt-command command]\n"
    "               [--force-local] [--connect-timeout seconds] [--open-timeout seconds]\n"
    "               [--plain-remote] [--streams count | auto]\n";

namespace {

// 1 GiB bounds the buffers reblock allocates for one record.
constexpr std::uint64_t kMaxRecordSize = std::uint64_t{1} << 30;

// The table: the order is --help's. A second -i or -o is a slip (which one
// was meant?), not an override.
OptionTable option_table(CommandLine& line, int& inputs, int& outputs) {
  Options& o = line.options;
  auto set = [](bool& field) { return [&field](const std::string&) { field = true; }; };
  auto end = [](std::string& field, int& count, const char* option) {
    return [&field, &count, option](const std::string& v) {
      if (count++ > 0) throw UsageError(std::string(option) + " given twice");
      field = v;
    };
  };
  using V = const std::string&;
  OptionTable table = {
      {"", 'B', "", "pad the last record to the full size (with --pad-byte's byte)", set(o.pad)},
      {"help", 'h', "", "print this text on standard output and exit", set(line.help)},
      {"", 'i', "input", "read from input instead of standard input", end(o.input, inputs, "-i")},
      {"", 'o', "output", "write to output instead of standard output", end(o.output, outputs, "-o")},
      {"", 'r', "", "copy record by record; print how many records of each size", set(o.records)},
      {"", 's', "size", "bytes in each record written (default 10240, at most 1g)",
       [&o](V v) {
         o.size = parse_size(v, "record size", kMaxRecordSize);
         if (o.size == 0) throw UsageError("invalid record size '0': must be at least 1");
       }},
      {"", 't', "", "print dd's totals on standard error when the copy ends", set(o.totals)},
      {"max-record", '\0', "size", "largest record read from a tape (default 1m)",
       [&o](V v) {
         o.max_record = parse_size(v, "--max-record", kMaxRecordSize);
         if (o.max_record == 0) throw UsageError("invalid --max-record '0': must be at least 1");
       }},
      {"pad-byte", '\0', "byte", "the value 0..255 -B pads with (default 0)",
       [&o](V v) { o.pad_byte = static_cast<std::byte>(parse_count(v, "--pad-byte", 0, 255)); }},
  };
  append(table, remote_options(line.open_options));
  append(table, {{"version", '\0', "", "print the version and exit", set(line.version)}});
  return table;
}

constexpr HelpLayout kLayout{12, 25, ' '};

}  // namespace

std::string options_text() {
  CommandLine unused;
  int inputs = 0, outputs = 0;
  return "\n" + help_lines(option_table(unused, inputs, outputs), kLayout) +
         "Input and output may be files, pipes, tape devices, virtual tapes (made by\n"
         "mt vt-create, or named by $TAPEKIT_VIRTUAL_TAPES) or [user@]host:path; sizes\n"
         "take the suffixes b (512), k, m, g.\n";
}

CommandLine parse_command_line(int argc, char** argv) {
  CommandLine line;
  int inputs = 0, outputs = 0;
  const OptionTable table = option_table(line, inputs, outputs);
  GivenOptions given = read_options(table, argc, argv);
  if (!given.operands.empty())
    throw UsageError("unexpected operand '" + given.operands.front() + "'");
  apply_options(given);
  return line;
}

}  // namespace tk::reblock
