// buffer option parsing. Checks and their messages follow buffer 1.19 (scripts
// and people know them); sizes are parsed strictly (1.19 silently misread
// "1.5k" as 1 and "1g" as 1), and the 2048-block / 512 KiB ceilings are gone.
#include "options.hpp"

#include <algorithm>
#include <cstdint>

#include <unistd.h>

#include "../../lib/error.hpp"
#include "../../lib/size.hpp"
#include "../common/option_table.hpp"
#include "../common/remote_options.hpp"
#include "buffer.hpp"
#include "ends.hpp"
#include "record.hpp"
#include "report.hpp"

namespace tk::buffer {

const char* const kUsageText =
    "Usage: buffer [-B] [-t] [-S size] [-m memsize] [-b blocks] [-p percent] [-s blocksize] "
    "[-u pause] [-i infile] [-o outfile] [-z size] [-Z] [-d]\n";

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

// Whole seconds from 0 (no limit) to a day.
int seconds_arg(const std::string& text, const char* option) {
  std::int64_t seconds = count_arg(text, option);
  if (seconds < 0 || seconds > 86400)
    fail_exact(std::string("buffer: invalid ") + option + " '" + text +
               "': seconds from 0 to 86400");
  return static_cast<int>(seconds);
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

// A block stays in the queue until every output acknowledged it, so the
// queue bounds what a remote output's pipeline may have in flight: the
// queue that holds that much (one block more, for the reader to fill
// meanwhile), or 0 when no output is remote. Whether the server there will
// pipeline is known only once it is open.
std::size_t blocks_for_write_window(const Options& o) {
  const OpenOptions how = open_options(o);
  std::size_t window = largest_write_window(o.output, how);
  for (const std::string& tee : o.tees) window = std::max(window, largest_write_window(tee, how));
  return window == 0 ? 0 : window / o.block_size + 1;
}

// What parsing keeps besides Options: which options were given, and the
// remote ones (Options holds them one by one).
struct Parse {
  Options& o;
  OpenOptions remote;
  bool blocks_given = false;
  bool memory_given = false;
  bool report_block_size = false;  // -z: report every (final) block
};

// -s, and -z: -s at its place in the line (a later -s wins, and -m checks
// against it), plus reports every block of whatever size is final.
void set_block_size(Parse& p, const std::string& value, bool z) {
  std::int64_t s = size_arg(value, z ? "-z" : "-s");
  if (z) p.report_block_size = true;
  if (s <= 0 || s > (std::int64_t{1} << 31))
    fail_exact("blocksize " + std::to_string(s) + " out of range");
  p.o.block_size = static_cast<std::size_t>(s);
}

void set_blocks(Parse& p, const std::string& value) {
  std::int64_t b = count_arg(value, "-b");
  if (b < 1 || b > (std::int64_t{1} << 24)) fail_exact("blocks " + std::to_string(b) + " out of range");
  p.o.blocks = static_cast<std::size_t>(b);
  p.blocks_given = true;
}

void set_memory(Parse& p, const std::string& value) {
  std::int64_t m = size_arg(value, "-m");
  std::uint64_t needed = kLegacyQueueHeader + p.o.block_size * (p.blocks_given ? p.o.blocks : 1);
  if (m < 0 || static_cast<std::uint64_t>(m) < needed)
    fail_exact("max_shmem " + std::to_string(m) + " too low");
  p.o.max_shmem = static_cast<std::uint64_t>(m);
  p.memory_given = true;
}

// -i or -o.
void set_end(Options& o, const std::string& value, bool in) {
  const char* key = in ? "i" : "o";
  if (!(in ? o.input : o.output).empty()) fail_exact(std::string("buffer: -") + key + " given twice");
  // An empty name (an unset variable) is no file, as open("") says to
  // 1.19; here it would mean standard input or output, and the data
  // meant for a tape would go down the pipe.
  if (value.empty())
    fail_exact(std::string("buffer: cannot open ") + (in ? "input" : "output") +
               " file: No such file or directory\nfilename: \nbuffer: -" + key +
               " '' names no file (- is standard " + (in ? "input" : "output") + ")");
  (in ? o.input : o.output) = value;
  if (in && !o.output.empty()) o.output_before_input = true;
}

void set_interval(Options& o, const std::string& value) {
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
}

// --high-water or --low-water.
void set_water(Options& o, const std::string& value, bool high) {
  const std::string key = high ? "high-water" : "low-water";
  std::int64_t pct = count_arg(value, ("--" + key).c_str());
  if (high ? pct < 1 || pct > 100 : pct < 0 || pct > 99)
    fail_exact("buffer: invalid --" + key + " '" + value + "': a percentage of the queue, " +
               (high ? "1 to 100" : "0 to 99"));
  (high ? o.high_water : o.low_water) = static_cast<int>(pct);
}

// The table: the order is --help's.
OptionTable option_table(Parse& p) {
  Options& o = p.o;
  auto set = [](bool& field) { return [&field](const std::string&) { field = true; }; };
  auto record = [&o](const char* key) {
    return [&o, key](const std::string& v) { parse_record_option(key, v, o); };
  };
  auto named = [](std::string& field, const char* option, const char* what) {
    return [&field, option, what](const std::string& v) {
      if (v.empty()) fail_exact(std::string("buffer: invalid --") + option + " '': " + what);
      field = v;
    };
  };
  using V = const std::string&;
  OptionTable table = {
      {"", 'B', "", "pad the last block with zero bytes to the block size", set(o.pad_last_block)},
      {"", 't', "", "print the kilobytes written when done", set(o.totals)},
      {"", 'S', "size", "report the kilobytes written every size bytes",
       [&o](V v) {
         std::int64_t every = size_arg(v, "-S");
         o.report_every = every <= 0 ? 10240 : static_cast<std::uint64_t>(every);  // as 1.19
         o.report_requested = true;
       }},
      {"", 'm', "size", "memory for the queue of blocks", [&p](V v) { set_memory(p, v); }},
      {"", 'b', "num", "blocks in the queue (instead of deriving it from -m)",
       [&p](V v) { set_blocks(p, v); }},
      {"", 'p', "percent", "write only when the queue is this full",
       [&o](V v) {
         std::int64_t pct = count_arg(v, "-p");
         if (pct < 0 || pct > 100) fail_exact("percent " + std::to_string(pct) + " out of range");
         o.percent = static_cast<int>(pct);
       }},
      {"", 's', "size", "block size: every write is one block", [&p](V v) { set_block_size(p, v, false); }},
      {"", 'u', "usecs", "pause after each block written",
       [&o](V v) {
         std::int64_t pause = count_arg(v, "-u");
         if (pause < 0) fail_exact("buffer: invalid -u '" + v + "': negative");
         o.pause_us = static_cast<std::uint64_t>(pause);
       }},
      {"", 'i', "infile", "read from infile instead of standard input", [&o](V v) { set_end(o, v, true); }},
      {"", 'o', "outfile", "write to outfile instead of standard output",
       [&o](V v) { set_end(o, v, false); }},
      {"", 'z', "size", "both -s and -S", [&p](V v) { set_block_size(p, v, true); }},
      {"", 'Z', "", "seek the device back to 0 after each GiB (old tape drivers)", set(o.seek_every_gib)},
      {"", 'd', "", "debug output on stderr (repeat for more)", [&o](V) { ++o.debug; }},
      {"next-volume", '\0', "CMD",
       "on a full medium run CMD, reopen the output, go on;\n"
       "without -o: at the end of each -i volume, run CMD, read the next",
       [&o](V v) { o.next_volume = v; }},
      {"progress", '\0', "", "one live status line on a terminal", set(o.progress)},
      {"interval", '\0', "SECS", "print a status line every SECS seconds", [&o](V v) { set_interval(o, v); }},
      {"no-drain", '\0', "", "discard queued data on SIGINT/SIGTERM (as buffer 1.19)",
       [&o](V) { o.drain_on_signal = false; }},
  };
  append(table, remote_options(p.remote));
  append(table, {
      {"timeout", '\0', "SECS", "end the run when a read or a block write takes SECS or more",
       [&o](V v) { o.timeout_seconds = seconds_arg(v, "--timeout"); }},
      {"input-rate", '\0', "RATE", "", [&o](V v) { o.input_rate = rate_arg(v, "--input-rate"); }},
      {"output-rate", '\0', "RATE", "at most RATE bytes a second (10m)",
       [&o](V v) { o.output_rate = rate_arg(v, "--output-rate"); }},
      {"queue-file", '\0', "PATH", "keep the queue's blocks in a file (a new name or a directory)",
       named(o.queue_file, "queue-file", "a file or directory name")},
      {"tee", '\0', "OUT", "also write every block to OUT (repeatable)",
       [&o](V v) {
         if (v.empty()) fail_exact("buffer: invalid --tee '': an output name");
         o.tees.push_back(v);
       }},
      {"keep-going", '\0', "", "an output that fails is dropped, the others go on", set(o.keep_going)},
      {"hash", '\0', "NAME", "digest what reached each output: sha256, md5 or xxh128",
       [&o](V v) {
         o.hash = digest_kind_from_name(v);
         if (!o.hash) fail_exact("buffer: invalid --hash '" + v + "': sha256, md5 or xxh128");
       }},
      {"verify", '\0', "", "read each volume back and compare its digest", set(o.verify)},
      {"json", '\0', "", "--interval lines and the summary as one JSON object per line", set(o.json)},
      {"size", '\0', "BYTES", "the input's length, for an ETA (a regular file's is known)",
       [&o](V v) {
         // An input may be larger than any queue: a whole tape, 18 TB and more.
         std::int64_t bytes = size_arg(v, "--size", INT64_MAX);
         if (bytes < 0) fail_exact("buffer: invalid --size '" + v + "': negative");
         o.size = static_cast<std::uint64_t>(bytes);
       }},
      {"high-water", '\0', "PCT", "", [&o](V v) { set_water(o, v, true); }},
      {"low-water", '\0', "PCT", "write from PCT full down to PCT, then wait",
       [&o](V v) { set_water(o, v, false); }},
      {"record", '\0', "FILE", "write a timeline of the run to FILE (JSON lines)", record("record")},
      {"record-tick", '\0', "TIME", "one record line every TIME (100ms)", record("record-tick")},
      {"long-write", '\0', "TIME", "record each write that blocks TIME or longer (1s)",
       record("long-write")},
      {"plot", '\0', "FILE.svg", "draw the run as a picture at its end, with advice", record("plot")},
      {"plot-from", '\0', "RECORD", "with --plot: draw a recorded run instead of running",
       record("plot-from")},
      {"help", '\0', "", "print this text and exit", set(o.help)},
      {"", 'h', "", "", set(o.help), false},
      {"version", '\0', "", "print the version and exit", set(o.version)},
  });
  return table;
}

}  // namespace

std::string help_text() {
  Options unused;
  Parse p{unused, {}};
  return help_lines(option_table(p), HelpLayout{});
}

Options parse_options(int argc, char** argv) {
  Options o;
  Parse p{o, {}};
  const OptionTable table = option_table(p);
  GivenOptions given = read_options(table, argc, argv);
  // Options are applied in command-line order because buffer 1.19 checks -m
  // against the -s and -b seen before it.
  try {
    apply_options(given);
  } catch (const UsageError& e) {
    fail_exact(std::string("buffer: ") + e.what());  // the remote options' words
  }
  o.rsh_command = p.remote.rsh_command;
  o.rmt_command = p.remote.rmt_command;
  o.force_local = p.remote.force_local;
  o.connect_timeout = p.remote.connect_timeout;
  o.open_timeout = p.remote.open_timeout;
  o.plain_remote = p.remote.plain_remote;
  o.streams = p.remote.streams;
  check_output_options(o);
  check_record_options(o);
  if (!given.operands.empty()) fail_exact("too many arguments");

  check_watermarks(o);
  if (p.report_block_size) {
    o.report_every = o.block_size;
    o.report_requested = true;
  }
  if (!p.blocks_given) {
    std::uint64_t usable = o.max_shmem > kLegacyQueueHeader ? o.max_shmem - kLegacyQueueHeader : 0;
    std::uint64_t blocks = usable / o.block_size;
    // 1.19's line first; then which option to change, as 1.19 never said.
    if (blocks == 0)
      fail_exact("Cannot handle blocks that big, aborting!\nbuffer: one block of -s " +
                 std::to_string(o.block_size) + " needs -m " +
                 std::to_string(kLegacyQueueHeader + o.block_size) + " or more (-m is " +
                 std::to_string(o.max_shmem) + (p.memory_given ? "" : " by default") + ")");
    o.blocks = static_cast<std::size_t>(blocks);
    // Only where the queue's size is nobody's choice: -p and the water
    // marks are shares of it.
    if (!p.memory_given && o.percent == 0 && o.high_water == 0 && o.low_water < 0)
      o.blocks = std::max(o.blocks, blocks_for_write_window(o));
    o.short_queue_note = short_queue_note(o, p.memory_given);
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
               " of memory: make " + (p.blocks_given ? "-b" : "-m") + " smaller");
  return o;
}

}  // namespace tk::buffer
