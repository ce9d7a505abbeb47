// buffer option parsing. Checks and their messages follow buffer 1.19 (scripts
// and people know them); sizes are parsed strictly (1.19 silently misread
// "1.5k" as 1 and "1g" as 1), and the 2048-block / 512 KiB ceilings are gone.
#include "options.hpp"

#include <algorithm>
#include <cstdint>

#include "../common/cxxopts.hpp"
#include <unistd.h>

#include "../../lib/error.hpp"
#include "../../lib/rmt/protocol.hpp"
#include "../../lib/size.hpp"
#include "buffer.hpp"
#include "record.hpp"
#include "report.hpp"

namespace tk::buffer {

const char* const kUsageText =
    "Usage: buffer [-B] [-t] [-S size] [-m memsize] [-b blocks] [-p percent] [-s blocksize] "
    "[-u pause] [-i infile] [-o outfile] [-z size] [-Z] [-d]\n";

const char* const kHelpText =
    "  -B          pad the last block with zero bytes to the block size\n"
    "  -t          print the kilobytes written when done\n"
    "  -S size     report the kilobytes written every size bytes\n"
    "  -m size     memory for the queue of blocks\n"
    "  -b num      blocks in the queue (instead of deriving it from -m)\n"
    "  -p percent  write only when the queue is this full\n"
    "  -s size     block size: every write is one block\n"
    "  -u usecs    pause after each block written\n"
    "  -i infile   read from infile instead of standard input\n"
    "  -o outfile  write to outfile instead of standard output\n"
    "  -z size     both -s and -S\n"
    "  -Z          seek the device back to 0 after each GiB (old tape drivers)\n"
    "  -d          debug output on stderr (repeat for more)\n"
    "  --next-volume CMD  on a full medium run CMD, reopen the output, go on;\n"
    "              without -o: at the end of each -i volume, run CMD, read the next\n"
    "  --progress  one live status line on a terminal\n"
    "  --interval SECS  print a status line every SECS seconds\n"
    "  --no-drain  discard queued data on SIGINT/SIGTERM (as buffer 1.19)\n"
    "  --rsh-command CMD, --rmt-command CMD  how to reach host:path devices\n"
    "  --force-local  a file name with a colon is a local file, not host:path\n"
    "  --connect-timeout SECS  give up on a host:path silent for SECS (0: wait)\n"
    "  --open-timeout SECS  give up on a host:path device not open after SECS (0: wait)\n"
    "  --plain-remote  host:x.tap is a plain file where the rmt is not tapekit's\n"
    "  --streams N|auto  N remote shells to a host:path, one session (auto: by round trip)\n"
    "  --timeout SECS  end the run when a read or a block write takes SECS or more\n"
    "  --input-rate RATE, --output-rate RATE  at most RATE bytes a second (10m)\n"
    "  --queue-file PATH  keep the queue's blocks in a file (a new name or a directory)\n"
    "  --tee OUT   also write every block to OUT (repeatable)\n"
    "  --keep-going  an output that fails is dropped, the others go on\n"
    "  --hash NAME  digest what reached each output: sha256, md5 or xxh128\n"
    "  --verify    read each volume back and compare its digest\n"
    "  --json      --interval lines and the summary as one JSON object per line\n"
    "  --size BYTES  the input's length, for an ETA (a regular file's is known)\n"
    "  --high-water PCT, --low-water PCT  write from PCT full down to PCT, then wait\n"
    "  --record FILE  write a timeline of the run to FILE (JSON lines)\n"
    "  --record-tick TIME  one record line every TIME (100ms)\n"
    "  --long-write TIME  record each write that blocks TIME or longer (1s)\n"
    "  --plot FILE.svg  draw the run as a picture at its end, with advice\n"
    "  --plot-from RECORD  with --plot: draw a recorded run instead of running\n"
    "  --help      print this text and exit\n"
    "  --version   print the version and exit\n";

namespace {

[[noreturn]] void fail_exact(const std::string& line) { throw ExactExit(kExitSetup, line + "\n"); }

// A malformed value is reported on one line, without the usage text. As in
// 1.19 (sscanf), leading blanks are skipped and a sign is read: a minus, so
// that a negative size meets 1.19's own range message, and a plus, as the
// counts of -b, -p and -u take it too.
std::int64_t size_arg(const std::string& text, const char* option,
                      std::uint64_t max = std::uint64_t{1} << 40) {
  std::size_t start = text.find_first_not_of(" \t");
  std::string digits = start == std::string::npos ? text : text.substr(start);
  bool negative = !digits.empty() && digits.front() == '-';
  if (negative || (!digits.empty() && digits.front() == '+')) digits.erase(0, 1);
  try {
    auto magnitude = static_cast<std::int64_t>(parse_size(digits, option, max));
    return negative ? -magnitude : magnitude;
  } catch (const UsageError& e) {
    // The value is quoted as given, with its sign, not as parsed.
    std::string message = e.what();
    if (auto at = message.find("'" + digits + "'"); at != std::string::npos && digits != text)
      message.replace(at + 1, digits.size(), text);
    fail_exact("buffer: " + message);
  }
}

// A rate in bytes per second, with the size units (10m = 10 MiB/s).
std::uint64_t rate_arg(const std::string& text, const char* option) {
  std::uint64_t rate = 0;
  try {
    rate = parse_size(text, option);
  } catch (const UsageError& e) {
    fail_exact(std::string("buffer: ") + e.what());
  }
  if (rate == 0)
    fail_exact(std::string("buffer: invalid ") + option + " '" + text +
               "': bytes per second, at least 1");
  return rate;
}

// Leading blanks are skipped, as 1.19's sscanf and atoi skip them (a value
// quoted from a padded variable, -b " 5").
std::int64_t count_arg(const std::string& text, const char* option) {
  std::size_t start = text.find_first_not_of(" \t");
  try {
    return parse_count(start == std::string::npos ? text : text.substr(start), option);
  } catch (const UsageError& e) {
    fail_exact(std::string("buffer: ") + e.what());
  }
}

// The pair works alone: a high mark without a low one writes the queue
// empty, a low mark without a high one waits for a full queue. -p's batches
// are a different rule, so the two do not mix.
void check_watermarks(Options& o) {
  if (o.high_water == 0 && o.low_water < 0) return;
  if (o.percent != 0)
    fail_exact("buffer: -p and --high-water/--low-water are two ways to batch writes; give one");
  if (o.high_water == 0) o.high_water = 100;
  if (o.low_water < 0) o.low_water = 0;
  if (o.low_water >= o.high_water)
    fail_exact("buffer: --low-water " + std::to_string(o.low_water) +
               " must be below --high-water " + std::to_string(o.high_water));
}

// --streams: a count of remote shells, or "auto" (0).
int streams_arg(const std::string& text) {
  if (text == "auto") return 0;
  std::int64_t n = count_arg(text, "--streams");
  if (n < 1 || n > rmt::max_streams)
    fail_exact("buffer: invalid --streams '" + text + "': 1 to " +
               std::to_string(rmt::max_streams) + ", or auto");
  return static_cast<int>(n);
}

// Whole seconds from 0 (no limit) to a day.
int seconds_arg(const std::string& text, const char* option) {
  std::int64_t seconds = count_arg(text, option);
  if (seconds < 0 || seconds > 86400)
    fail_exact(std::string("buffer: invalid ") + option + " '" + text +
               "': seconds from 0 to 86400");
  return static_cast<int>(seconds);
}

// --queue-file, --tee, --keep-going, --hash, --verify; false for any other key.
bool parse_output_option(const std::string& key, const std::string& value, Options& o) {
  if (key == "queue-file") {
    if (value.empty()) fail_exact("buffer: invalid --queue-file '': a file or directory name");
    o.queue_file = value;
  } else if (key == "tee") {
    if (value.empty()) fail_exact("buffer: invalid --tee '': an output name");
    o.tees.push_back(value);
  } else if (key == "keep-going") {
    o.keep_going = true;
  } else if (key == "hash") {
    o.hash = digest_kind_from_name(value);
    if (!o.hash) fail_exact("buffer: invalid --hash '" + value + "': sha256, md5 or xxh128");
  } else if (key == "verify") {
    o.verify = true;
  } else {
    return false;
  }
  return true;
}

// What the outputs' options need of each other.
void check_output_options(Options& o) {
  if (o.verify && !o.hash) o.hash = DigestKind::sha256;
  if (o.verify && (o.output.empty() || o.output == "-"))
    fail_exact("buffer: --verify needs -o: standard output cannot be read back");
  // Two outputs that are one file are refused with the other clashes
  // (refuse_one_file_twice).
  for (const std::string& tee : o.tees)
    if (o.verify && tee == "-")
      fail_exact("buffer: --verify cannot read back --tee -: standard output");
}

// buffer 1.19's -m 1m default holds three blocks of -s 256k: the output then
// waits on an empty queue at every pause of the input. The default stays, as
// scripts expect; the run says once what -m would hold 32 blocks, rounded
// up to a size as one would type it.
std::string short_queue_note(const Options& o, bool memory_given) {
  constexpr std::size_t few_blocks = 8, enough_blocks = 32;
  if (o.blocks >= few_blocks) return {};
  const std::uint64_t needed = kLegacyQueueHeader + enough_blocks * o.block_size;
  const std::uint64_t mib = std::uint64_t{1} << 20, kib = 1024;
  const std::string suggested = needed >= mib ? std::to_string((needed + mib - 1) / mib) + "m"
                                              : std::to_string((needed + kib - 1) / kib) + "k";
  return "buffer: note: -m " + std::to_string(o.max_shmem) + (memory_given ? "" : " (the default)") +
         " holds a queue of only " + std::to_string(o.blocks) + (o.blocks == 1 ? " block" : " blocks") +
         " of " + std::to_string(o.block_size) +
         " bytes, too few to keep the output streaming when the input pauses; -m " + suggested +
         " holds " + std::to_string(enough_blocks) + "\n";
}

}  // namespace

Options parse_options(int argc, char** argv) {
  cxxopts::Options spec("buffer");
  spec.add_options()
      ("B", "", cxxopts::value<bool>())
      ("t", "", cxxopts::value<bool>())
      ("Z", "", cxxopts::value<bool>())
      ("d", "", cxxopts::value<bool>())
      ("S", "", cxxopts::value<std::string>())
      ("m", "", cxxopts::value<std::string>())
      ("b", "", cxxopts::value<std::string>())
      ("p", "", cxxopts::value<std::string>())
      ("s", "", cxxopts::value<std::string>())
      ("u", "", cxxopts::value<std::string>())
      ("i", "", cxxopts::value<std::string>())
      ("o", "", cxxopts::value<std::string>())
      ("z", "", cxxopts::value<std::string>())
      ("next-volume", "", cxxopts::value<std::string>())
      ("progress", "", cxxopts::value<bool>())
      ("interval", "", cxxopts::value<std::string>())
      ("no-drain", "", cxxopts::value<bool>())
      ("rsh-command", "", cxxopts::value<std::string>())
      ("rmt-command", "", cxxopts::value<std::string>())
      ("force-local", "", cxxopts::value<bool>())
      ("connect-timeout", "", cxxopts::value<std::string>())
      ("open-timeout", "", cxxopts::value<std::string>())
      ("plain-remote", "", cxxopts::value<bool>())
      ("streams", "", cxxopts::value<std::string>())
      ("h,help", "", cxxopts::value<bool>())
      ("timeout", "", cxxopts::value<std::string>())
      ("input-rate", "", cxxopts::value<std::string>())
      ("output-rate", "", cxxopts::value<std::string>())
      ("queue-file", "", cxxopts::value<std::string>())
      ("tee", "", cxxopts::value<std::string>())
      ("keep-going", "", cxxopts::value<bool>())
      ("hash", "", cxxopts::value<std::string>())
      ("verify", "", cxxopts::value<bool>())
      ("json", "", cxxopts::value<bool>())
      ("size", "", cxxopts::value<std::string>())
      ("high-water", "", cxxopts::value<std::string>())
      ("low-water", "", cxxopts::value<std::string>())
      ("record", "", cxxopts::value<std::string>())
      ("record-tick", "", cxxopts::value<std::string>())
      ("long-write", "", cxxopts::value<std::string>())
      ("plot", "", cxxopts::value<std::string>())
      ("plot-from", "", cxxopts::value<std::string>())
      ("version", "", cxxopts::value<bool>());

  GetoptWords words(spec, argc, argv);
  cxxopts::ParseResult parsed;
  try {
    parsed = spec.parse(words.argc(), words.argv());
  } catch (const cxxopts::exceptions::parsing& e) {
    throw_getopt_error(e);
  }

  Options o;
  bool blocks_given = false;
  bool memory_given = false;
  bool report_block_size = false;  // -z: report every (final) block
  // Options are applied in command-line order because buffer 1.19 checks -m
  // against the -s and -b seen before it.
  for (const auto& kv : parsed.arguments()) {
    const std::string& key = kv.key();
    const std::string& value = kv.value();
    if (key == "B") {
      o.pad_last_block = true;
    } else if (key == "t") {
      o.totals = true;
    } else if (key == "Z") {
      o.seek_every_gib = true;
    } else if (key == "d") {
      ++o.debug;
    } else if (key == "s" || key == "z") {
      // -z is -s at its place in the line (a later -s wins, and -m checks
      // against it), plus reports every block of whatever size is final.
      std::int64_t s = size_arg(value, key == "s" ? "-s" : "-z");
      if (key == "z") report_block_size = true;
      if (s <= 0 || s > (std::int64_t{1} << 31))
        fail_exact("blocksize " + std::to_string(s) + " out of range");
      o.block_size = static_cast<std::size_t>(s);
    } else if (key == "b") {
      std::int64_t b = count_arg(value, "-b");
      if (b < 1 || b > (std::int64_t{1} << 24))
        fail_exact("blocks " + std::to_string(b) + " out of range");
      o.blocks = static_cast<std::size_t>(b);
      blocks_given = true;
    } else if (key == "m") {
      std::int64_t m = size_arg(value, "-m");
      std::uint64_t needed = kLegacyQueueHeader + o.block_size * (blocks_given ? o.blocks : 1);
      if (m < 0 || static_cast<std::uint64_t>(m) < needed)
        fail_exact("max_shmem " + std::to_string(m) + " too low");
      o.max_shmem = static_cast<std::uint64_t>(m);
      memory_given = true;
    } else if (key == "p") {
      std::int64_t p = count_arg(value, "-p");
      if (p < 0 || p > 100) fail_exact("percent " + std::to_string(p) + " out of range");
      o.percent = static_cast<int>(p);
    } else if (key == "u") {
      std::int64_t pause = count_arg(value, "-u");
      if (pause < 0) fail_exact("buffer: invalid -u '" + value + "': negative");
      o.pause_us = static_cast<std::uint64_t>(pause);
    } else if (key == "S") {
      std::int64_t every = size_arg(value, "-S");
      o.report_every = every <= 0 ? 10240 : static_cast<std::uint64_t>(every);  // as 1.19
      o.report_requested = true;
    } else if (key == "i" || key == "o") {
      bool in = key == "i";
      if (!(in ? o.input : o.output).empty()) fail_exact("buffer: -" + key + " given twice");
      // An empty name (an unset variable) is no file, as open("") says to
      // 1.19; here it would mean standard input or output, and the data
      // meant for a tape would go down the pipe.
      if (value.empty())
        fail_exact(std::string("buffer: cannot open ") + (in ? "input" : "output") +
                   " file: No such file or directory\nfilename: \nbuffer: -" + key +
                   " '' names no file (- is standard " + (in ? "input" : "output") + ")");
      (in ? o.input : o.output) = value;
      if (in && !o.output.empty()) o.output_before_input = true;
    } else if (key == "next-volume") {
      o.next_volume = value;
    } else if (key == "progress") {
      o.progress = true;
    } else if (key == "interval") {
      std::size_t used = 0;
      double secs = 0;
      try {
        secs = std::stod(value, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      // The lines show tenths of a second, and a period that rounds to no
      // time at all would print them in a loop as fast as stderr takes them.
      if (used != value.size() || !(secs >= 0.1) || secs > 86400)
        fail_exact("buffer: invalid --interval '" + value +
                   "': seconds from 0.1 to 86400 (0.5 is half a second)");
      o.interval_seconds = secs;
    } else if (key == "no-drain") {
      o.drain_on_signal = false;
    } else if (key == "rsh-command") {
      o.rsh_command = value;
    } else if (key == "rmt-command") {
      o.rmt_command = value;
    } else if (key == "force-local") {
      o.force_local = true;
    } else if (key == "connect-timeout") {
      o.connect_timeout = seconds_arg(value, "--connect-timeout");
    } else if (key == "open-timeout") {
      o.open_timeout = seconds_arg(value, "--open-timeout");
    } else if (key == "plain-remote") {
      o.plain_remote = true;
    } else if (key == "streams") {
      o.streams = streams_arg(value);
    } else if (key == "help") {
      o.help = true;
    } else if (key == "version") {
      o.version = true;
    } else if (key == "json") {
      o.json = true;
    } else if (key == "size") {
      // An input may be larger than any queue: a whole tape, 18 TB and more.
      std::int64_t bytes = size_arg(value, "--size", INT64_MAX);
      if (bytes < 0) fail_exact("buffer: invalid --size '" + value + "': negative");
      o.size = static_cast<std::uint64_t>(bytes);
    } else if (key == "high-water" || key == "low-water") {
      std::int64_t pct = count_arg(value, key == "high-water" ? "--high-water" : "--low-water");
      if (key == "high-water" ? pct < 1 || pct > 100 : pct < 0 || pct > 99)
        fail_exact("buffer: invalid --" + key + " '" + value + "': a percentage of the queue, " +
                   (key == "high-water" ? "1 to 100" : "0 to 99"));
      (key == "high-water" ? o.high_water : o.low_water) = static_cast<int>(pct);
    } else if (key == "timeout") {
      o.timeout_seconds = seconds_arg(value, "--timeout");
    } else if (key == "input-rate") {
      o.input_rate = rate_arg(value, "--input-rate");
    } else if (key == "output-rate") {
      o.output_rate = rate_arg(value, "--output-rate");
    } else if (!parse_output_option(key, value, o) && !parse_record_option(key, value, o)) {
      fail_exact("buffer: option --" + key + " is not handled");  // a table above out of step
    }
  }
  check_output_options(o);
  check_record_options(o);
  if (!parsed.unmatched().empty()) fail_exact("too many arguments");

  check_watermarks(o);
  if (report_block_size) {
    o.report_every = o.block_size;
    o.report_requested = true;
  }
  if (!blocks_given) {
    std::uint64_t usable = o.max_shmem > kLegacyQueueHeader ? o.max_shmem - kLegacyQueueHeader : 0;
    std::uint64_t blocks = usable / o.block_size;
    // 1.19's line first; then which option to change, as 1.19 never said.
    if (blocks == 0)
      fail_exact("Cannot handle blocks that big, aborting!\nbuffer: one block of -s " +
                 std::to_string(o.block_size) + " needs -m " +
                 std::to_string(kLegacyQueueHeader + o.block_size) + " or more (-m is " +
                 std::to_string(o.max_shmem) + (memory_given ? "" : " by default") + ")");
    o.blocks = static_cast<std::size_t>(blocks);
    o.short_queue_note = short_queue_note(o, memory_given);
  }
  // A queue on a file may be larger than memory (its file system's room is
  // checked when the file is made); only its header, a length per block,
  // stays in memory.
  long pages = ::sysconf(_SC_PHYS_PAGES);
  long page_size = ::sysconf(_SC_PAGESIZE);
  double in_memory = o.queue_file.empty()
                        ? static_cast<double>(o.blocks) * static_cast<double>(o.block_size)
                        : static_cast<double>(o.blocks) * sizeof(std::uint64_t);
  if (pages > 0 && page_size > 0 &&
      in_memory > static_cast<double>(pages) * static_cast<double>(page_size))
    fail_exact("Cannot handle that many blocks, aborting!\nbuffer: a queue of " +
               human_bytes(static_cast<double>(o.blocks) * static_cast<double>(o.block_size)) +
               " (" + std::to_string(o.blocks) + " blocks of " + std::to_string(o.block_size) +
               " bytes) is more than this machine's " +
               human_bytes(static_cast<double>(pages) * static_cast<double>(page_size)) +
               " of memory: make " + (blocks_given ? "-b" : "-m") + " smaller");
  return o;
}

}  // namespace tk::buffer
