// reblock's core: turning a stream of bytes or records into exact records,
// and surveying the record sizes of a tape.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "../../lib/error.hpp"
#include "../../lib/tape/tape.hpp"

namespace tk::reblock {

// reblock's exit statuses; a stop signal ends it by that signal instead.
enum class Exit : int { ok = 0, failure = 1, usage = 2 };

struct Options {
  std::size_t size = 10240;         // -s: bytes per output record
  std::size_t max_record = 1 << 20;  // --max-record: largest input record
  bool pad = false;                  // -B: pad the last record to size
  std::byte pad_byte{0};             // --pad-byte
  bool totals = false;               // -t
  bool records = false;              // -r: copy record by record, histogram
  std::string input = "-";
  std::string output = "-";
};

// The counts dd prints: "full+partial records in/out". Kept up to date while
// copying, so they are right when a copy fails part-way.
struct Totals {
  std::uint64_t in_full = 0;
  std::uint64_t in_partial = 0;
  std::uint64_t out_full = 0;
  std::uint64_t out_partial = 0;
  std::uint64_t bytes_in = 0;
  std::uint64_t bytes_out = 0;
  std::map<std::size_t, std::uint64_t> sizes;  // -r: record size -> count
};

// Output the device had accepted but then lost (a tape image's buffered
// records: LostWrites) did not reach it after all: takes it off the counts.
// So do a remote output's writes still in flight after e, sent but never
// answered (a lost connection over which the file could not be read back,
// a stop that cut the session short): they are not known to be there, and
// the message e carries says how many may be.
void take_back_lost(const Error& e, const Tape& out, Totals& totals) noexcept;

// " after N full records of SIZE bytes" (" after N records (B bytes)" with
// -r): what of the output can be trusted when a write or the close failed.
std::string reached_text(const Options& options, const Totals& totals);

// Copies in (up to its first filemark or end of data) to out as records of
// exactly options.size bytes, the last one short unless options.pad. On a read
// error the bytes already read are written before the error propagates.
void copy_reblocked(Tape& in, Tape& out, const Options& options, Totals& totals);

// Copies one record per write, counting record sizes in totals.sizes.
void copy_records(Tape& in, Tape& out, const Options& options, Totals& totals);

// dd's three summary lines, counts against options.size.
std::string format_summary(const Totals& totals, double seconds);

// One line per record size, largest first, then the totals.
std::string format_histogram(const Totals& totals);

// The whole program after run_main: parses the command line, copies, and
// returns the exit status (failures are thrown, for run_main to report).
int run(int argc, char** argv);

}  // namespace tk::reblock
