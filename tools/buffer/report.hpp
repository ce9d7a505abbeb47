// What buffer prints about its progress: buffer 1.19's -S/-t records, byte for
// byte, and the extensions' status lines and summary.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "../../lib/ring/ring.hpp"

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

// "[  0.0-  2.0 s]  58.2 MiB  233 Mbit/s  fill 85%"
std::string interval_line(double from_s, double to_s, std::uint64_t bytes, int fill_percent);
// One live line for a terminal: total, current rate, fill, elapsed.
std::string progress_line(std::uint64_t total_bytes, double rate_bytes_per_s, int fill_percent,
                          double elapsed_s);
// The closing summary of --progress / --interval.
std::string summary_line(const RingStats& stats, std::size_t ring_blocks, double elapsed_s);

// 1536 -> "1.5 KiB"
std::string human_bytes(double bytes);

// Writes the whole string to stderr with write(2): unbuffered, safe to call
// from both processes without interleaving within a line.
void print_stderr(const std::string& text);

}  // namespace tk::buffer
