// buffer --record: the timeline's format, its recorder thread and its reader.
#include "record.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#include "../../lib/error.hpp"
#include "../../lib/json.hpp"
#include "buffer.hpp"
#include "ends.hpp"
#include "signals.hpp"

namespace tk::buffer {

namespace {

// Unwritten lines kept while the record's file does not take them (a pipe
// whose reader is slow): past this, the file is dropped.
constexpr std::size_t kMaxPendingRecord = std::size_t{8} << 20;

// --record-tick and --long-write: "100ms", "0.5s" or "2" (seconds, as --interval).
std::chrono::milliseconds time_arg(const std::string& text, const char* option,
                                   std::chrono::milliseconds low, std::chrono::milliseconds high) {
  std::string number = text;
  double scale = 1000;
  if (number.size() > 2 && number.ends_with("ms")) {
    number.resize(number.size() - 2);
    scale = 1;
  } else if (number.size() > 1 && number.ends_with("s")) {
    number.resize(number.size() - 1);
  }
  std::size_t used = 0;
  double value = -1;
  try {
    value = std::stod(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  auto ms = std::llround(value * scale);
  if (number.empty() || used != number.size() || !std::isfinite(value) || ms < low.count() ||
      ms > high.count())
    throw ExactExit(kExitSetup, std::string("buffer: invalid ") + option + " '" + text +
                                    "': a time such as 100ms or 0.5s, from " +
                                    std::to_string(low.count()) + "ms to " +
                                    std::to_string(high.count() / 1000) + "s\n");
  return std::chrono::milliseconds(ms);
}

// A record is read from a file anyone may have written: a number out of
// the field's range (or NaN) is clamped to it, never converted as it is,
// which would be undefined.
std::uint64_t count_of(const FlatJson& o, const char* key) {
  double value = o.number(key).value_or(0);
  if (!(value > 0)) return 0;
  if (value >= 0x1p64) return UINT64_MAX;
  return static_cast<std::uint64_t>(value);
}
int int_of(const FlatJson& o, const char* key, double otherwise = 0) {
  double value = o.number(key).value_or(otherwise);
  if (std::isnan(value)) return 0;
  return static_cast<int>(std::clamp(value, double{INT_MIN}, double{INT_MAX}));
}
double number_of(const FlatJson& o, const char* key, double otherwise = 0) {
  return o.number(key).value_or(otherwise);
}

}  // namespace

namespace {

// `later`, the tick right after `tick`, joins it: one tick over both spans.
void merge_tick(Tick& tick, const Tick& later) {
  tick.t = later.t;
  tick.span += later.span;
  tick.fill = later.fill;
  tick.fill_lo = std::min(tick.fill_lo, later.fill_lo);
  tick.fill_hi = std::max(tick.fill_hi, later.fill_hi);
  tick.bytes_in += later.bytes_in;
  tick.bytes_out += later.bytes_out;
  tick.out_wait_s += later.out_wait_s;
  tick.in_wait_s += later.in_wait_s;
  tick.underruns += later.underruns;
}

}  // namespace

void RunRecord::add(const Tick& tick) {
  if (in_last_entry_ > 0 && in_last_entry_ < ticks_per_entry_) {
    merge_tick(ticks.back(), tick);
    ++in_last_entry_;
    return;
  }
  if (ticks.size() >= kMaxTicks) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < ticks.size(); i += 2) {
      Tick merged = ticks[i];
      if (i + 1 < ticks.size()) merge_tick(merged, ticks[i + 1]);
      ticks[kept++] = merged;
    }
    ticks.resize(kept);
    ticks_per_entry_ *= 2;
  }
  ticks.push_back(tick);
  in_last_entry_ = 1;
}

std::string record_header_line(const RecordHeader& h) {
  JsonObject line;
  line.string("record", "buffer")
      .integer("version", h.version)
      .fixed("tick_ms", h.tick_s * 1000, 0)
      .fixed("long_write_ms", h.long_write_s * 1000, 0)
      .integer("block_size", h.block_size)
      .integer("blocks", h.blocks)
      .integer("percent", h.percent)
      .integer("high_water", h.high_water)
      .integer("low_water", h.low_water);
  if (h.output_rate > 0) line.integer("output_rate", h.output_rate);
  return line.string("input", h.input).string("output", h.output).line();
}

std::string record_tick_line(const Tick& k) {
  JsonObject line;
  line.fixed("t", k.t, 3).integer("fill", k.fill).integer("in", k.bytes_in).integer("out", k.bytes_out);
  // Quiet ticks stay short: the wait fields only when there was a wait.
  if (k.out_wait_s >= 0.00005) line.fixed("out_wait_ms", k.out_wait_s * 1000, 1);
  if (k.in_wait_s >= 0.00005) line.fixed("in_wait_ms", k.in_wait_s * 1000, 1);
  if (k.underruns > 0) line.integer("underruns", k.underruns);
  return line.line();
}

namespace {

// An event's line as an object, so that the end's line can take the run's totals.
JsonObject event_object(const RunEvent& e) {
  JsonObject line;
  line.fixed("t", e.t, 3);
  switch (e.kind) {
    case RunEvent::Kind::long_write:
      line.string("event", "long_write").fixed("ms", e.seconds * 1000, 1);
      break;
    case RunEvent::Kind::volume:
      line.string("event", "volume").integer("volume", e.volume);
      break;
    case RunEvent::Kind::signal:
      line.string("event", "signal").string("signal", e.signal);
      break;
    case RunEvent::Kind::end:
      line.string("event", "end");
      break;
  }
  return line;
}

}  // namespace

std::string record_event_line(const RunEvent& e) { return event_object(e).line(); }

RunRecord parse_record(std::istream& in, const std::string& name) {
  RunRecord record;
  std::string line;
  std::size_t number = 0;
  bool header_seen = false;
  // A bad record is bad input, said on one line without an errno's words.
  auto fail = [&](const std::string& why) {
    throw ExactExit(kExitSetup, "buffer: " + name + ", line " + std::to_string(number) + ": " +
                                    why + "\n");
  };
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    std::string why;
    std::optional<FlatJson> read = FlatJson::parse(line, why);
    if (!read) fail("not a JSON object (" + why + ")");
    const FlatJson& o = *read;
    if (!header_seen) {
      if (o.string("record") != "buffer")
        fail("not a buffer record: the first line has no \"record\":\"buffer\"");
      RecordHeader& h = record.header;
      h.version = int_of(o, "version", 1);
      if (h.version != 1) fail("record version " + std::to_string(h.version) + " is not known");
      h.tick_s = number_of(o, "tick_ms", 100) / 1000;
      h.long_write_s = number_of(o, "long_write_ms", 1000) / 1000;
      h.block_size = count_of(o, "block_size");
      h.blocks = count_of(o, "blocks");
      h.percent = int_of(o, "percent");
      h.high_water = int_of(o, "high_water");
      h.low_water = int_of(o, "low_water", -1);
      h.output_rate = count_of(o, "output_rate");
      if (auto input = o.string("input")) h.input = *input;
      if (auto output = o.string("output")) h.output = *output;
      if (h.block_size == 0 || h.blocks == 0) fail("the header has no block_size or blocks");
      header_seen = true;
      continue;
    }
    std::optional<double> at = o.number("t");
    if (!at) fail("no \"t\"");
    double t = *at;
    std::optional<std::string> event = o.string("event");
    if (!event) {
      if (!o.number("fill") || !o.number("in") || !o.number("out"))
        fail("a tick needs \"fill\", \"in\" and \"out\"");
      Tick k;
      k.t = t;
      double before = record.ticks.empty() ? 0 : record.ticks.back().t;
      k.span = std::max(0.0, t - before);
      k.fill = k.fill_lo = k.fill_hi = count_of(o, "fill");
      k.bytes_in = count_of(o, "in");
      k.bytes_out = count_of(o, "out");
      k.out_wait_s = number_of(o, "out_wait_ms") / 1000;
      k.in_wait_s = number_of(o, "in_wait_ms") / 1000;
      k.underruns = count_of(o, "underruns");
      record.add(k);
      continue;
    }
    RunEvent e;
    e.t = t;
    if (*event == "long_write") {
      e.kind = RunEvent::Kind::long_write;
      e.seconds = number_of(o, "ms") / 1000;
    } else if (*event == "volume") {
      e.kind = RunEvent::Kind::volume;
      e.volume = count_of(o, "volume");
    } else if (*event == "signal") {
      e.kind = RunEvent::Kind::signal;
      e.signal = o.string("signal").value_or("a signal");
    } else if (*event == "end") {
      e.kind = RunEvent::Kind::end;
      record.long_writes_lost = count_of(o, "long_writes_lost");
    } else {
      continue;  // an event a later version added: the picture does without it
    }
    record.events.push_back(e);
  }
  if (!header_seen) throw ExactExit(kExitSetup, "buffer: " + name + ": empty, not a buffer record\n");
  return record;
}

bool parse_record_option(const std::string& key, const std::string& value, Options& o) {
  auto name = [&](std::string& field, const char* what) {
    if (value.empty())
      throw ExactExit(kExitSetup, "buffer: invalid --" + key + " '': " + what + "\n");
    field = value;
  };
  if (key == "record") {
    name(o.record_file, "a file name");
  } else if (key == "plot") {
    name(o.plot_file, "a file name for the SVG picture");
  } else if (key == "plot-from") {
    name(o.plot_from, "a record written by --record");
  } else if (key == "record-tick") {
    o.record_tick = time_arg(value, "--record-tick", std::chrono::milliseconds(10),
                             std::chrono::milliseconds(10000));
  } else if (key == "long-write") {
    o.long_write = time_arg(value, "--long-write", std::chrono::milliseconds(10),
                            std::chrono::milliseconds(3600000));
  } else {
    return false;
  }
  return true;
}

void check_record_options(const Options& o) {
  // Standard output carries the data; a record or picture there, or over
  // the input or output, would mix into it or destroy it.
  // Which files they are, and whether they clash with the ends, is asked
  // once everything is parsed (refuse_one_file_twice).
  auto refuse_standard_output = [&](const std::string& name, const char* option) {
    if (name == "-")
      throw ExactExit(kExitSetup, std::string("buffer: invalid ") + option +
                                      " '-': standard output carries the data; give a file name\n");
  };
  refuse_standard_output(o.record_file, "--record");
  refuse_standard_output(o.plot_file, "--plot");
  if (!o.plot_from.empty() && o.plot_file.empty())
    throw ExactExit(kExitSetup, "buffer: --plot-from needs --plot FILE.svg, the picture to draw\n");
  if (!o.plot_from.empty() && (!o.record_file.empty() || !o.input.empty() || !o.output.empty()))
    throw ExactExit(kExitSetup,
                    "buffer: --plot-from draws a record and runs no pipeline: -i, -o and --record "
                    "do not go with it\n");
}

Recorder::Recorder(const Ring& ring, const RunState& run, const Options& options,
                   Clock::time_point start)
    : run_(run), options_(options), start_(start) {
  if (!records_run(options)) return;
  active_ = true;
  RecordHeader& h = record_.header;
  h.tick_s = std::chrono::duration<double>(options.record_tick).count();
  h.long_write_s = std::chrono::duration<double>(options.long_write).count();
  h.block_size = ring.block_size();
  h.blocks = ring.blocks();
  h.percent = options.percent;
  h.high_water = options.high_water;
  h.low_water = options.low_water;
  h.output_rate = options.output_rate;
  h.input = options.input.empty() ? "-" : options.input;
  h.output = options.output.empty() ? "-" : options.output;
  if (!options.record_file.empty()) {
    // O_NONBLOCK: a FIFO nobody reads must not hold up the run at the open,
    // nor a slow reader of one at a write.
    int fd = ::open(options.record_file.c_str(),
                    O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0666);
    if (fd < 0)
      drop_file("cannot open it: " + strerror_text(errno));
    else
      file_ = Fd(fd);
  }
  emit(record_header_line(h));
  flush();
}

void Recorder::take(const RunStats& now) {
  take_tick(now, false);
  flush();
}

void Recorder::finish(const RunStats& s) {
  if (!active_) return;
  take_tick(s, true);
  RunEvent end;
  end.kind = RunEvent::Kind::end;
  end.t = record_.ticks.empty() ? 0 : record_.ticks.back().t;
  record_.events.push_back(end);
  JsonObject line = event_object(end);
  line.integer("bytes_in", s.bytes_in)
      .integer("bytes_out", s.bytes_out)
      .integer("underruns", s.underruns)
      .integer("long_writes", s.long_writes);
  if (record_.long_writes_lost > 0) line.integer("long_writes_lost", record_.long_writes_lost);
  emit(line.line());
  flush();
  file_ = Fd();
}

void Recorder::take_tick(const RunStats& now, bool last) {
  // In milliseconds, as the file has it: the picture drawn at the end of
  // the run and the one --plot-from draws from the file are the same.
  const double t =
      std::round(std::chrono::duration<double>(Clock::now() - start_).count() * 1000) / 1000;
  if (last && t - before_t_ < 0.0005 && now.bytes_in == before_.bytes_in &&
      now.bytes_out == before_.bytes_out)
    return;
  auto delta = [](std::uint64_t after, std::uint64_t before) {
    return after > before ? after - before : 0;  // bytes_out is corrected downward at times
  };
  // Events first: the long writes that ended during the tick, at their start.
  const std::int64_t start_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(start_.time_since_epoch()).count();
  for (; long_writes_seen_ < now.long_writes; ++long_writes_seen_) {
    auto w = run_.long_write(long_writes_seen_);
    if (!w) {
      ++record_.long_writes_lost;
      continue;
    }
    RunEvent e;
    e.kind = RunEvent::Kind::long_write;
    e.t = static_cast<double>(w->start_ns - start_ns) / 1e9;
    e.seconds = static_cast<double>(w->duration_ns) / 1e9;
    record_.events.push_back(e);
    emit(record_event_line(e));
  }
  if (now.volume != before_.volume) {
    RunEvent e;
    e.kind = RunEvent::Kind::volume;
    e.t = t;
    e.volume = now.volume;
    record_.events.push_back(e);
    emit(record_event_line(e));
  }
  const ProcessState& reader = run_.reader();
  int signals = reader.signals();
  bool stop_input = reader.has(StopReason::stop_reading);
  if (signals > signals_seen_ || (stop_input && !stop_input_seen_)) {
    RunEvent e;
    e.kind = RunEvent::Kind::signal;
    e.t = t;
    e.signal = signals > signals_seen_ ? signal_name(reader.stop_signal()) : "SIGUSR2";
    record_.events.push_back(e);
    emit(record_event_line(e));
    signals_seen_ = signals;
    stop_input_seen_ = stop_input;
  }
  Tick k;
  k.t = t;
  k.span = std::max(0.0, t - before_t_);
  k.fill = k.fill_lo = k.fill_hi = now.blocks_filled;
  k.bytes_in = delta(now.bytes_in, before_.bytes_in);
  k.bytes_out = delta(now.bytes_out, before_.bytes_out);
  // A tick cannot hold more waiting than its own length.
  k.out_wait_s = std::min(k.span, static_cast<double>(delta(now.consumer_wait_ns,
                                                            before_.consumer_wait_ns)) / 1e9);
  k.in_wait_s = std::min(k.span, static_cast<double>(delta(now.producer_wait_ns,
                                                           before_.producer_wait_ns)) / 1e9);
  k.underruns = delta(now.underruns, before_.underruns);
  record_.add(k);
  emit(record_tick_line(k));
  before_ = now;
  before_t_ = t;
}

void Recorder::emit(const std::string& line) {
  if (!file_.valid()) return;
  pending_ += line;
}

void Recorder::flush() {
  while (file_.valid() && !pending_.empty()) {
    ssize_t n = ::write(file_.get(), pending_.data(), pending_.size());
    if (n > 0) {
      pending_.erase(0, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      if (pending_.size() > kMaxPendingRecord)
        drop_file("its reader does not keep up (" + human_bytes(static_cast<double>(pending_.size())) +
                  " not taken)");
      return;
    }
    drop_file("write failed: " + strerror_text(n < 0 ? errno : ENOSPC));
  }
}

void Recorder::drop_file(const std::string& why) {
  print_stderr("buffer: --record " + options_.record_file + ": " + why +
               "; the run goes on without recording to it\n");
  file_ = Fd();
  pending_.clear();
}

}  // namespace tk::buffer
