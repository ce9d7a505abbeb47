// buffer --record: the timeline's format, its recorder thread and its reader.
#include "record.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <unistd.h>

#include "../../lib/error.hpp"
#include "buffer.hpp"
#include "ends.hpp"
#include "signals.hpp"

namespace tk::buffer {

namespace {

// Unwritten lines kept while the record's file does not take them (a pipe
// whose reader is slow): past this, the file is dropped.
constexpr std::size_t kMaxPendingRecord = std::size_t{8} << 20;

std::string json_field(const char* key, const std::string& value_text) {
  return std::string(",\"") + key + "\":" + value_text;
}

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

// A flat JSON object, as the record's lines are: string, number and
// boolean values only. Values are kept as their text (strings unescaped).
struct FlatObject {
  std::map<std::string, std::string> strings;
  std::map<std::string, double> numbers;
};

class LineParser {
 public:
  LineParser(const std::string& line) : s_(line) {}

  // Empty `error` when the line is one object.
  FlatObject parse(std::string& error) {
    FlatObject o;
    try {
      skip();
      expect('{');
      skip();
      if (peek() == '}') {
        ++at_;
      } else {
        for (;;) {
          skip();
          std::string key = string();
          skip();
          expect(':');
          skip();
          if (peek() == '"') {
            o.strings[key] = string();
          } else if (s_.compare(at_, 4, "true") == 0) {
            at_ += 4;
            o.numbers[key] = 1;
          } else if (s_.compare(at_, 5, "false") == 0) {
            at_ += 5;
            o.numbers[key] = 0;
          } else {
            o.numbers[key] = number();
          }
          skip();
          if (peek() == ',') {
            ++at_;
            continue;
          }
          expect('}');
          break;
        }
      }
      skip();
      if (at_ != s_.size()) throw std::runtime_error("text after the object");
    } catch (const std::runtime_error& e) {
      error = e.what();
    }
    return o;
  }

 private:
  char peek() const { return at_ < s_.size() ? s_[at_] : '\0'; }
  void skip() {
    while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\t' || s_[at_] == '\r')) ++at_;
  }
  void expect(char c) {
    if (peek() != c) throw std::runtime_error(std::string("expected '") + c + "'");
    ++at_;
  }
  double number() {
    const char* begin = s_.c_str() + at_;
    char* end = nullptr;
    double v = std::strtod(begin, &end);
    if (end == begin || !std::isfinite(v)) throw std::runtime_error("expected a value");
    at_ += static_cast<std::size_t>(end - begin);
    return v;
  }
  std::string string() {
    expect('"');
    std::string out;
    for (;;) {
      if (at_ >= s_.size()) throw std::runtime_error("unterminated string");
      char c = s_[at_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_ >= s_.size()) throw std::runtime_error("unterminated string");
      char e = s_[at_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': {
          if (at_ + 4 > s_.size()) throw std::runtime_error("bad \\u escape");
          unsigned long code = std::strtoul(s_.substr(at_, 4).c_str(), nullptr, 16);
          at_ += 4;
          // json_string escapes control characters and stray bytes (a
          // byte that was not UTF-8, given back as it was) only.
          out += code < 0x100 ? static_cast<char>(code) : '?';
          break;
        }
        default: out += e;
      }
    }
  }

  const std::string& s_;
  std::size_t at_ = 0;
};

std::uint64_t count_of(const FlatObject& o, const char* key) {
  auto it = o.numbers.find(key);
  return it == o.numbers.end() || it->second < 0 ? 0 : static_cast<std::uint64_t>(it->second);
}
double number_of(const FlatObject& o, const char* key, double otherwise = 0) {
  auto it = o.numbers.find(key);
  return it == o.numbers.end() ? otherwise : it->second;
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
  return "{\"record\":\"buffer\"" + json_field("version", std::to_string(h.version)) +
         json_field("tick_ms", json_number(h.tick_s * 1000, 0)) +
         json_field("long_write_ms", json_number(h.long_write_s * 1000, 0)) +
         json_field("block_size", std::to_string(h.block_size)) +
         json_field("blocks", std::to_string(h.blocks)) +
         json_field("percent", std::to_string(h.percent)) +
         json_field("high_water", std::to_string(h.high_water)) +
         json_field("low_water", std::to_string(h.low_water)) +
         (h.output_rate > 0 ? json_field("output_rate", std::to_string(h.output_rate)) : std::string()) +
         json_field("input", json_string(h.input)) + json_field("output", json_string(h.output)) +
         "}\n";
}

std::string record_tick_line(const Tick& k) {
  std::string line = "{\"t\":" + json_number(k.t, 3) + json_field("fill", std::to_string(k.fill)) +
                     json_field("in", std::to_string(k.bytes_in)) +
                     json_field("out", std::to_string(k.bytes_out));
  // Quiet ticks stay short: the wait fields only when there was a wait.
  if (k.out_wait_s >= 0.00005) line += json_field("out_wait_ms", json_number(k.out_wait_s * 1000, 1));
  if (k.in_wait_s >= 0.00005) line += json_field("in_wait_ms", json_number(k.in_wait_s * 1000, 1));
  if (k.underruns > 0) line += json_field("underruns", std::to_string(k.underruns));
  return line + "}\n";
}

std::string record_event_line(const RunEvent& e, const std::string& more_fields) {
  std::string line = "{\"t\":" + json_number(e.t, 3);
  switch (e.kind) {
    case RunEvent::Kind::long_write:
      line += ",\"event\":\"long_write\"" + json_field("ms", json_number(e.seconds * 1000, 1));
      break;
    case RunEvent::Kind::volume:
      line += ",\"event\":\"volume\"" + json_field("volume", std::to_string(e.volume));
      break;
    case RunEvent::Kind::signal:
      line += ",\"event\":\"signal\"" + json_field("signal", json_string(e.signal));
      break;
    case RunEvent::Kind::end:
      line += ",\"event\":\"end\"";
      break;
  }
  return line + more_fields + "}\n";
}

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
    std::string error;
    FlatObject o = LineParser(line).parse(error);
    if (!error.empty()) fail("not a JSON object (" + error + ")");
    if (!header_seen) {
      auto kind = o.strings.find("record");
      if (kind == o.strings.end() || kind->second != "buffer")
        fail("not a buffer record: the first line has no \"record\":\"buffer\"");
      RecordHeader& h = record.header;
      h.version = static_cast<int>(number_of(o, "version", 1));
      if (h.version != 1) fail("record version " + std::to_string(h.version) + " is not known");
      h.tick_s = number_of(o, "tick_ms", 100) / 1000;
      h.long_write_s = number_of(o, "long_write_ms", 1000) / 1000;
      h.block_size = count_of(o, "block_size");
      h.blocks = count_of(o, "blocks");
      h.percent = static_cast<int>(number_of(o, "percent"));
      h.high_water = static_cast<int>(number_of(o, "high_water"));
      h.low_water = static_cast<int>(number_of(o, "low_water", -1));
      h.output_rate = count_of(o, "output_rate");
      if (o.strings.count("input")) h.input = o.strings["input"];
      if (o.strings.count("output")) h.output = o.strings["output"];
      if (h.block_size == 0 || h.blocks == 0) fail("the header has no block_size or blocks");
      header_seen = true;
      continue;
    }
    if (!o.numbers.count("t")) fail("no \"t\"");
    double t = o.numbers["t"];
    auto event = o.strings.find("event");
    if (event == o.strings.end()) {
      if (!o.numbers.count("fill") || !o.numbers.count("in") || !o.numbers.count("out"))
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
    if (event->second == "long_write") {
      e.kind = RunEvent::Kind::long_write;
      e.seconds = number_of(o, "ms") / 1000;
    } else if (event->second == "volume") {
      e.kind = RunEvent::Kind::volume;
      e.volume = count_of(o, "volume");
    } else if (event->second == "signal") {
      e.kind = RunEvent::Kind::signal;
      e.signal = o.strings.count("signal") ? o.strings["signal"] : "a signal";
    } else if (event->second == "end") {
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
  std::string totals = json_field("bytes_in", std::to_string(s.bytes_in)) +
                       json_field("bytes_out", std::to_string(s.bytes_out)) +
                       json_field("underruns", std::to_string(s.underruns)) +
                       json_field("long_writes", std::to_string(s.long_writes));
  if (record_.long_writes_lost > 0)
    totals += json_field("long_writes_lost", std::to_string(record_.long_writes_lost));
  emit(record_event_line(end, totals));
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
