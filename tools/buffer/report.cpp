// Progress records and status lines for buffer.
#include "report.hpp"

#include <cstdio>
#include <span>
#include <unistd.h>

#include "../../lib/io.hpp"

namespace tk::buffer {

LegacyReport::LegacyReport(std::uint64_t every_bytes, bool totals, Clock::time_point start)
    : step_k_(every_bytes / 1024), next_k_(every_bytes / 1024), totals_(totals), start_(start) {}

std::string LegacyReport::record(std::uint64_t kilobytes, std::int64_t elapsed_ms) {
  char rate[32];
  if (kilobytes == 0)
    std::snprintf(rate, sizeof rate, "%10d", 0);
  else if (elapsed_ms <= 0)
    std::snprintf(rate, sizeof rate, "%10s", "?");
  else
    std::snprintf(rate, sizeof rate, "%10llu",
                  static_cast<unsigned long long>(kilobytes * 1000 /
                                                  static_cast<std::uint64_t>(elapsed_ms)));
  char line[80];
  std::snprintf(line, sizeof line, " %10lluK, %sK/s\r", static_cast<unsigned long long>(kilobytes),
                rate);
  return line;
}

void LegacyReport::after_block(std::uint64_t bytes_out) {
  if (step_k_ == 0 || bytes_out / 1024 < next_k_) return;
  next_k_ += step_k_;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start_).count();
  print_stderr(record(bytes_out / 1024, ms));
}

void LegacyReport::finish(std::uint64_t bytes_out) {
  std::string text;
  if (step_k_ != 0) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start_).count();
    text = record(bytes_out / 1024, ms) + "\n";
  }
  if (totals_) text += "Kilobytes Out " + std::to_string(bytes_out / 1024) + "\n";
  if (!text.empty()) print_stderr(text);
}

std::string human_bytes(double bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 5) {
    bytes /= 1024;
    ++unit;
  }
  char text[32];
  if (unit == 0)
    std::snprintf(text, sizeof text, "%.0f %s", bytes, units[unit]);
  else
    std::snprintf(text, sizeof text, "%.1f %s", bytes, units[unit]);
  return text;
}

namespace {
std::string human_bits_rate(double bytes_per_s) {
  double bits = bytes_per_s * 8;
  static const char* const units[] = {"bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"};
  int unit = 0;
  while (bits >= 1000 && unit < 4) {
    bits /= 1000;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.0f %s", bits, units[unit]);
  return text;
}
}  // namespace

std::string interval_line(double from_s, double to_s, std::uint64_t bytes, int fill_percent) {
  double span = to_s - from_s;
  double rate = span > 0 ? static_cast<double>(bytes) / span : 0;
  char line[128];
  std::snprintf(line, sizeof line, "[%5.1f-%5.1f s]  %s  %s  fill %d%%\n", from_s, to_s,
                human_bytes(static_cast<double>(bytes)).c_str(), human_bits_rate(rate).c_str(),
                fill_percent);
  return line;
}

std::string progress_line(std::uint64_t total_bytes, double rate_bytes_per_s, int fill_percent,
                          double elapsed_s) {
  auto secs = static_cast<long>(elapsed_s);
  char line[128];
  std::snprintf(line, sizeof line, "\r%10s  %10s/s  fill %3d%%  %ld:%02ld:%02ld\033[K",
                human_bytes(static_cast<double>(total_bytes)).c_str(),
                human_bytes(rate_bytes_per_s).c_str(), fill_percent, secs / 3600,
                secs / 60 % 60, secs % 60);
  return line;
}

std::string summary_line(const RingStats& stats, std::size_t ring_blocks, double elapsed_s) {
  double rate = elapsed_s > 0 ? static_cast<double>(stats.bytes_out) / elapsed_s : 0;
  auto peak = ring_blocks ? static_cast<int>(stats.peak_filled * 100 / ring_blocks) : 0;
  char line[256];
  std::snprintf(line, sizeof line,
                "summary: %s (%llu bytes) in %.2f s, average %s/s, %llu writer underruns, "
                "peak fill %d%%\n",
                human_bytes(static_cast<double>(stats.bytes_out)).c_str(),
                static_cast<unsigned long long>(stats.bytes_out), elapsed_s,
                human_bytes(rate).c_str(), static_cast<unsigned long long>(stats.underruns),
                peak);
  return line;
}

void print_stderr(const std::string& text) {
  try {
    write_all(2, std::as_bytes(std::span(text.data(), text.size())), "standard error");
  } catch (const Error&) {
    // A closed stderr must not end the transfer: the data matters more.
  }
}

}  // namespace tk::buffer
