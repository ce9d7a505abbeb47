// buffer's command line: buffer 1.19's options with its defaults and checks,
// plus long-only extensions.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "../../lib/digest.hpp"

namespace tk::buffer {

struct Options {
  std::size_t block_size = 10240;  // -s
  std::size_t blocks = 0;          // -b, or derived from -m
  std::uint64_t max_shmem = 1048576;  // -m
  std::uint64_t report_every = 0;  // -S (0: no progress records)
  bool report_requested = false;   // -S or -z given
  int percent = 0;                 // -p
  std::uint64_t pause_us = 0;      // -u
  bool pad_last_block = false;     // -B
  bool totals = false;             // -t
  bool seek_every_gib = false;     // -Z
  int debug = 0;                   // -d, repeatable
  std::string input;               // -i, empty: standard input
  std::string output;              // -o, empty: standard output
  bool output_before_input = false;  // -o came before -i: opened in that order, as 1.19 did
  std::optional<std::string> next_volume;  // --next-volume CMD
  bool progress = false;           // --progress
  double interval_seconds = 0;     // --interval SECS (0: off)
  bool drain_on_signal = true;     // --no-drain turns it off
  std::string rsh_command;         // --rsh-command, for host:path names
  std::string rmt_command;         // --rmt-command
  bool force_local = false;        // --force-local
  int connect_timeout = -1;        // --connect-timeout SECONDS (-1: default)
  int open_timeout = -1;           // --open-timeout SECONDS (-1: default)
  bool plain_remote = false;       // --plain-remote
  int streams = 1;                 // --streams N|auto (0: auto), for host:path names
  bool help = false;               // --help
  bool version = false;            // --version

  // The watchdog, reading across volumes and rate limits (mbuffer's -W, -n,
  // -r and -R in buffer's style).
  int timeout_seconds = 0;          // --timeout SECONDS (0: no watchdog)
  std::uint64_t input_rate = 0;     // --input-rate RATE, bytes per second (0: no limit)
  std::uint64_t output_rate = 0;    // --output-rate RATE

  // The queue on a file, more outputs, inline digests.
  std::string queue_file;           // --queue-file PATH: the ring's blocks on a file
  std::vector<std::string> tees;    // --tee OUT, repeatable: more outputs beside -o
  bool keep_going = false;          // --keep-going: a failed output does not stop the others
  std::optional<DigestKind> hash;   // --hash NAME
  bool verify = false;              // --verify: read each volume back, compare digests

  // Reports and flow: kept together so merges stay simple.
  bool json = false;                     // --json: status lines and summary as JSON
  std::optional<std::uint64_t> size;     // --size BYTES: the input's length, for an ETA
  int high_water = 0;                    // --high-water PCT (0: not given)
  int low_water = -1;                    // --low-water PCT (-1: not given)

  // The run's record and its picture: record.hpp, plot.hpp.
  std::string record_file;                      // --record FILE
  std::chrono::milliseconds record_tick{100};   // --record-tick TIME
  std::chrono::milliseconds long_write{1000};   // --long-write TIME
  std::string plot_file;                        // --plot FILE.svg
  std::string plot_from;                        // --plot-from RECORD: draw it, run nothing

  // Said once at the start when the queue -m leaves is too short to keep
  // an output streaming (empty: nothing to say).
  std::string short_queue_note;
};

// --next-volume changes output volumes when -o is given; without -o, it
// changes the volumes of -i, read one after the other.
inline bool reads_volumes(const Options& o) {
  return o.next_volume && o.output.empty() && !o.input.empty();
}
// --progress, --interval or --json: the live reports and the closing summary.
inline bool reports_progress(const Options& o) {
  return o.progress || o.interval_seconds > 0 || o.json;
}
// --record or --plot: the run is recorded (and advised on at its end).
inline bool records_run(const Options& o) { return !o.record_file.empty() || !o.plot_file.empty(); }
inline bool writes_volumes(const Options& o) { return o.next_volume && !o.output.empty(); }

// buffer 1.19's ring geometry: the 32800-byte header it reserved on amd64 is
// kept in the block-count formula so -m gives the same number of blocks.
inline constexpr std::uint64_t kLegacyQueueHeader = 32800;

// Parses argv; throws UsageError (getopt-style messages) or ExactExit (buffer
// 1.19's range messages, status 255).
Options parse_options(int argc, char** argv);

// The synopsis printed after a usage error; --help prints it, then
// help_text(), the option table's lines.
extern const char* const kUsageText;
std::string help_text();

}  // namespace tk::buffer
