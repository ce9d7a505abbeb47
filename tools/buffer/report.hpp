// What buffer prints about its progress: buffer 1.19's -S/-t records, byte for
// byte, and the extensions' status lines and summary, as text or --json.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "../../lib/json.hpp"  // JsonObject, for the JSON this file's users write
#include "run_state.hpp"

namespace tk::buffer {

using Clock = std::chrono::steady_clock;

// buffer 1.19's " %10lluK, %10luK/s\r" records. The rate is the average since
// start in K per second; "?" when no millisecond has passed yet.
class LegacyReport {
 public:
  // every_bytes: -S (0 = off). Below 1024 bytes nothing is printed, as in 1.19.
  LegacyReport(std::uint64_t every_bytes, bool totals, Clock::time_point start);
  // After each block written: maybe one record.
  void after_block(std::uint64_t bytes_out);
  // At a clean end: the final record, its newline, then "Kilobytes Out N".
  void finish(std::uint64_t bytes_out);

  static std::string record(std::uint64_t kilobytes, std::int64_t elapsed_ms);

 private:
  std::uint64_t step_k_;
  std::uint64_t next_k_;
  bool totals_;
  Clock::time_point start_;
};

// The ring's counters at both ends of one status period. Rates are in bytes
// per second and printed in MiB/s (one unit family: KiB, MiB, GiB).
struct Interval {
  double from_s = 0;
  double to_s = 0;
  RunStats before;
  RunStats now;
  std::size_t ring_blocks = 1;
  std::optional<std::uint64_t> total_bytes;  // --size, or a regular file's size: gives an ETA
};

// "[  0.0-  2.0 s]  out 58.2 MiB  29.1 MiB/s  in 29.1 MiB/s  fill 85%  ETA 0:00:12"
std::string interval_line(const Interval& period);
// One live line for a terminal: total out, both rates, fill, elapsed, ETA.
std::string progress_line(const Interval& period);
// The same period as one JSON object on one line ("event":"interval").
std::string interval_json(const Interval& period);

// The digests of what reached the outputs (--hash), lower-case hex. The
// writer computes them; the summary only prints them.
struct DigestReport {
  std::string algorithm;  // "sha256", "md5", "xxh128"
  std::string total;      // of all -o's volumes; empty when -o was dropped (--keep-going)
  std::vector<std::string> per_volume;  // of each of -o's volumes, one without --next-volume
  struct Tee {
    std::string name;
    std::string total;
  };
  std::vector<Tee> tees;  // each --tee output that still works
};

struct Summary {
  RunStats stats;
  std::size_t ring_blocks = 1;
  double elapsed_s = 0;  // start to the end of the run
  double input_s = 0;    // start to the end of the input
  std::optional<DigestReport> digest;
};

// The closing summary of --progress / --interval; underruns explained.
std::string summary_line(const Summary& summary);
// The same as one JSON object ("event":"summary"); "digest" only with --hash,
// "tapealert" ({"before":[..],"during":[..]}) only from a drive that answers.
std::string summary_json(const Summary& summary);
// A line for the TapeAlert flags the output drive had raised before the run
// and one for those it raised during it ("the drive asks for cleaning:
// TapeAlert 20, Cleaning required (Critical)"); "" when there were none.
std::string alerts_text(const RunStats& stats);

// 1536 -> "1.5 KiB"
std::string human_bytes(double bytes);

// Each line of TEXT as {"event":"message","text":"..."} on a line of its own.
std::string json_message_lines(const std::string& text);

// --json: from now on print_stderr turns each line into a "message" object,
// so that standard error carries JSON lines only. Call once, before the fork.
void set_json_stderr(bool json);

// Writes the whole string to stderr with write(2): unbuffered, safe to call
// from both processes without interleaving within a line. Under --json
// each line becomes a "message" object (set_json_stderr).
void print_stderr(const std::string& text);
// The same, for lines that are already JSON objects (or never are under --json).
void print_stderr_as_is(const std::string& text);

}  // namespace tk::buffer
