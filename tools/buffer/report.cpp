// Progress records and status lines for buffer.
#include "report.hpp"

#include <cstdio>
#include <optional>
#include <span>
#include <unistd.h>

#include "../../lib/io.hpp"
#include "../../lib/scsi/pages.hpp"

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

namespace {

// Under --json (set once, before the fork, like the program name): every
// line print_stderr is given goes out as a "message" object.
bool g_json_stderr = false;

}  // namespace

void set_json_stderr(bool json) { g_json_stderr = json; }

std::string json_message_lines(const std::string& text) {
  std::string json;
  std::size_t from = 0;
  while (from < text.size()) {
    std::size_t end = text.find('\n', from);
    std::size_t next = end == std::string::npos ? text.size() : end + 1;
    if (end == std::string::npos) end = text.size();
    json += JsonObject().string("event", "message").string("text", text.substr(from, end - from)).line();
    from = next;
  }
  return json;
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

double rate(std::uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds : 0;
}

// What moved during one period, and how fast.
struct PeriodFlow {
  std::uint64_t bytes_out;
  double rate_in;
  double rate_out;
};

PeriodFlow period_flow(const Interval& period) {
  double span = period.to_s - period.from_s;
  std::uint64_t out = period.now.bytes_out - period.before.bytes_out;
  return {out, rate(period.now.bytes_in - period.before.bytes_in, span), rate(out, span)};
}

int fill_percent(const RingStats& stats, std::size_t ring_blocks) {
  return ring_blocks ? static_cast<int>(stats.blocks_filled * 100 / ring_blocks) : 0;
}

// Seconds until the known total is out at the average rate so far.
std::optional<double> eta_seconds(const Interval& period) {
  if (!period.total_bytes || period.to_s <= 0 || period.now.bytes_out == 0) return std::nullopt;
  std::uint64_t left =
      *period.total_bytes > period.now.bytes_out ? *period.total_bytes - period.now.bytes_out : 0;
  return static_cast<double>(left) / rate(period.now.bytes_out, period.to_s);
}

std::string clock_text(double seconds) {
  auto secs = static_cast<long>(seconds + 0.5);
  char text[32];
  std::snprintf(text, sizeof text, "%ld:%02ld:%02ld", secs / 3600, secs / 60 % 60, secs % 60);
  return text;
}

// How far the output's cartridge is from its end: the last sample of its
// capacity, less what went out since (a drive that compresses takes more).
struct TapeLeft {
  double used_percent;
  std::uint64_t remaining_bytes;
  std::uint64_t maximum_bytes;
  std::optional<double> end_s;  // at the period's output rate
};

std::optional<TapeLeft> tape_left(const RunStats& now, double rate_out) {
  if (now.tape_maximum_mib == 0) return std::nullopt;
  constexpr std::uint64_t mib = 1 << 20;
  std::uint64_t maximum = now.tape_maximum_mib * mib;
  std::uint64_t since = now.bytes_out > now.tape_sampled_at ? now.bytes_out - now.tape_sampled_at : 0;
  std::uint64_t sampled = now.tape_remaining_mib * mib;
  std::uint64_t remaining = sampled > since ? sampled - since : 0;
  TapeLeft left{100.0 * static_cast<double>(maximum - remaining) / static_cast<double>(maximum),
                remaining, maximum, std::nullopt};
  if (rate_out > 0) left.end_s = static_cast<double>(remaining) / rate_out;
  return left;
}

// "  tape 63% full, 1:02:03 to its end"; without an output rate, no time.
std::string tape_text(const Interval& period, double rate_out) {
  std::optional<TapeLeft> left = tape_left(period.now, rate_out);
  if (!left) return "";
  char text[64];
  std::snprintf(text, sizeof text, "  tape %.0f%% full", left->used_percent);
  return text + (left->end_s ? ", " + clock_text(*left->end_s) + " to its end" : std::string());
}

std::string eta_text(const Interval& period) {
  std::optional<double> eta = eta_seconds(period);
  return eta ? "  ETA " + clock_text(*eta) : "";
}

// ", sha256 HEX (volume 1 HEX, volume 2 HEX), sha256 of TEE HEX": -o's
// volumes only when there were several.
std::string digest_text(const DigestReport& digest) {
  std::string text;
  if (!digest.total.empty()) {
    text += ", " + digest.algorithm + " " + digest.total;
    if (digest.per_volume.size() > 1) {
      for (std::size_t i = 0; i < digest.per_volume.size(); ++i)
        text += (i ? ", volume " : " (volume ") + std::to_string(i + 1) + " " +
                digest.per_volume[i];
      text += ")";
    }
  }
  for (const DigestReport::Tee& tee : digest.tees)
    text += ", " + digest.algorithm + " of " + tee.name + " " + tee.total;
  return text;
}

// {"algorithm":"sha256","total":"<hex>","volumes":["<hex>",...],
//  "tees":[{"name":"<name>","total":"<hex>"},...]}; no total and volumes
// when -o was dropped, no tees without --tee.
std::string digest_json(const DigestReport& digest) {
  JsonObject json;
  json.string("algorithm", digest.algorithm);
  if (!digest.total.empty()) {
    JsonArray volumes;
    for (const std::string& hex : digest.per_volume) volumes.string(hex);
    json.string("total", digest.total).raw("volumes", volumes.text());
  }
  if (!digest.tees.empty()) {
    JsonArray tees;
    for (const DigestReport::Tee& tee : digest.tees)
      tees.raw(JsonObject().string("name", tee.name).string("total", tee.total).text());
    json.raw("tees", tees.text());
  }
  return json.text();
}

}  // namespace

std::string interval_line(const Interval& period) {
  PeriodFlow flow = period_flow(period);
  char line[160];
  std::snprintf(line, sizeof line, "[%5.1f-%5.1f s]  out %s  %s/s  in %s/s  fill %d%%",
                period.from_s, period.to_s, human_bytes(static_cast<double>(flow.bytes_out)).c_str(),
                human_bytes(flow.rate_out).c_str(), human_bytes(flow.rate_in).c_str(),
                fill_percent(period.now, period.ring_blocks));
  return line + tape_text(period, flow.rate_out) + eta_text(period) + "\n";
}

std::string progress_line(const Interval& period) {
  PeriodFlow flow = period_flow(period);
  char line[160];
  std::snprintf(line, sizeof line, "\r%10s  out %10s/s  in %10s/s  fill %3d%%  %s",
                human_bytes(static_cast<double>(period.now.bytes_out)).c_str(),
                human_bytes(flow.rate_out).c_str(), human_bytes(flow.rate_in).c_str(),
                fill_percent(period.now, period.ring_blocks), clock_text(period.to_s).c_str());
  std::string file;
  if (period.now.tape_file >= 0) file = "  tape file " + std::to_string(period.now.tape_file);
  return line + file + tape_text(period, flow.rate_out) + eta_text(period) + "\033[K";
}

std::string interval_json(const Interval& period) {
  PeriodFlow flow = period_flow(period);
  const RunStats& now = period.now;
  JsonObject json;
  json.string("event", "interval")
      .fixed("from_s", period.from_s, 3)
      .fixed("to_s", period.to_s, 3)
      .integer("bytes_in", now.bytes_in)
      .integer("bytes_out", now.bytes_out)
      .fixed("rate_in", flow.rate_in, 0)
      .fixed("rate_out", flow.rate_out, 0)
      .integer("fill_percent", fill_percent(now, period.ring_blocks))
      .integer("queued_bytes", now.bytes_in - now.bytes_out)
      .integer("underruns", now.underruns)
      .integer("volume", now.volume);
  if (now.tape_file >= 0) json.integer("tape_file", now.tape_file);
  if (period.total_bytes) json.integer("total_bytes", *period.total_bytes);
  if (std::optional<double> eta = eta_seconds(period)) json.fixed("eta_s", *eta, 1);
  if (std::optional<TapeLeft> left = tape_left(now, flow.rate_out)) {
    json.fixed("tape_used_percent", left->used_percent, 1)
        .integer("tape_remaining_bytes", left->remaining_bytes)
        .integer("tape_maximum_bytes", left->maximum_bytes);
    if (left->end_s) json.fixed("tape_end_s", *left->end_s, 1);
  }
  return json.line();
}

std::string alerts_text(const RunStats& stats) {
  auto list = [](std::uint64_t flags) {
    std::string text;
    for (const scsi::TapeAlertFlag& flag : scsi::tapealert_flags(flags))
      text += std::string(text.empty() ? "" : "; ") + "TapeAlert " + std::to_string(flag.number) +
              ", " + std::string(flag.name) + " (" + std::string(scsi::severity_name(flag.severity)) + ")";
    return text;
  };
  // Bacula's words for what an operator is to do about flags 20 and 21.
  auto cleaning = [](std::uint64_t flags) {
    return (flags >> 19 & 3) ? "the drive asks for cleaning: " : "";
  };
  std::string text;
  if (std::string flags = list(stats.alerts_before); !flags.empty())
    text += "buffer: " + std::string(cleaning(stats.alerts_before)) +
            "before the run the drive had raised " + flags + "\n";
  if (std::string flags = list(stats.alerts_during); !flags.empty())
    text += "buffer: " + std::string(cleaning(stats.alerts_during)) +
            "during the run the drive raised " + flags + "\n";
  return text;
}

std::string summary_line(const Summary& summary) {
  const RunStats& stats = summary.stats;
  char line[320];
  std::snprintf(line, sizeof line,
                "summary: %s (%llu bytes) in %.2f s, out %s/s, in %s/s, %llu writer underruns "
                "(waits of the output on an empty queue), peak fill %d%%",
                human_bytes(static_cast<double>(stats.bytes_out)).c_str(),
                static_cast<unsigned long long>(stats.bytes_out), summary.elapsed_s,
                human_bytes(rate(stats.bytes_out, summary.elapsed_s)).c_str(),
                human_bytes(rate(stats.bytes_in, summary.input_s)).c_str(),
                static_cast<unsigned long long>(stats.underruns),
                summary.ring_blocks
                    ? static_cast<int>(stats.peak_filled * 100 / summary.ring_blocks)
                    : 0);
  std::string text = line;
  if (stats.tape_file >= 0) text += ", written as tape file " + std::to_string(stats.tape_file);
  if (stats.volume > 1) text += ", " + std::to_string(stats.volume) + " volumes";
  if (summary.digest) text += digest_text(*summary.digest);
  return text + "\n" + alerts_text(stats);
}

std::string summary_json(const Summary& summary) {
  const RunStats& stats = summary.stats;
  JsonObject json;
  json.string("event", "summary")
      .fixed("elapsed_s", summary.elapsed_s, 3)
      .integer("bytes_in", stats.bytes_in)
      .integer("bytes_out", stats.bytes_out)
      .fixed("rate_in", rate(stats.bytes_in, summary.input_s), 0)
      .fixed("rate_out", rate(stats.bytes_out, summary.elapsed_s), 0)
      .integer("peak_fill_percent",
               summary.ring_blocks ? stats.peak_filled * 100 / summary.ring_blocks : 0)
      .integer("underruns", stats.underruns)
      .integer("volume", stats.volume);
  if (stats.tape_file >= 0) json.integer("tape_file", stats.tape_file);
  if (summary.digest) json.raw("digest", digest_json(*summary.digest));
  if (stats.alerts_known) {
    auto list = [](std::uint64_t flags) {
      JsonArray items;
      for (const scsi::TapeAlertFlag& flag : scsi::tapealert_flags(flags))
        items.raw(JsonObject()
                      .integer("flag", flag.number)
                      .string("name", flag.name)
                      .string("severity", scsi::severity_name(flag.severity))
                      .text());
      return items.text();
    };
    json.raw("tapealert", JsonObject()
                              .raw("before", list(stats.alerts_before))
                              .raw("during", list(stats.alerts_during))
                              .text());
  }
  return json.line();
}

void print_stderr_as_is(const std::string& text) {
  try {
    write_all(2, std::as_bytes(std::span(text.data(), text.size())), "standard error");
  } catch (const Error&) {
    // A closed stderr must not end the transfer: the data matters more.
  }
}

void print_stderr(const std::string& text) {
  print_stderr_as_is(g_json_stderr ? json_message_lines(text) : text);
}

}  // namespace tk::buffer
