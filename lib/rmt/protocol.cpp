// The rmt wire codec: request framing, argument decoding, replies.
#include "protocol.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fcntl.h>
#include <sys/mtio.h>

#include "../escape.hpp"

namespace tk::rmt {

std::size_t MemorySource::read_some(std::span<std::byte> buf) {
  std::size_t n = std::min(buf.size(), data_.size());
  if (n > 0) std::memcpy(buf.data(), data_.data(), n);
  data_ = data_.subspan(n);
  return n;
}

BufferedReader::BufferedReader(ByteSource& source, std::size_t capacity)
    : source_(source), buf_(new std::byte[capacity]), capacity_(capacity) {}

bool BufferedReader::fill() {
  // Empty first: a read that throws (a timeout) must not replay old bytes.
  pos_ = end_ = 0;
  end_ = source_.read_some(std::span(buf_.get(), capacity_));
  return end_ > 0;
}

int BufferedReader::get() {
  if (pos_ == end_ && !fill()) return -1;
  return std::to_integer<int>(buf_[pos_++]);
}

bool BufferedReader::read_line(std::string& out, std::size_t keep, std::size_t drain,
                               bool& too_long) {
  out.clear();
  too_long = false;
  std::size_t total = 0;
  for (;;) {
    if (pos_ == end_ && !fill()) return false;
    const auto* start = reinterpret_cast<const char*>(buf_.get() + pos_);
    std::size_t avail = end_ - pos_;
    const void* nl = std::memchr(start, '\n', avail);
    std::size_t chunk = nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - start) : avail;
    if (out.size() < keep) out.append(start, std::min(chunk, keep - out.size()));
    total += chunk;
    pos_ += chunk;
    if (total > keep) too_long = true;
    if (total > drain) throw ProtocolError(ProtocolError::Kind::oversize, "request line too long");
    if (nl) {
      ++pos_;
      return true;
    }
  }
}

std::size_t BufferedReader::read_exact(std::span<std::byte> buf) {
  std::size_t got = std::min(buf.size(), end_ - pos_);
  if (got > 0) std::memcpy(buf.data(), buf_.get() + pos_, got);
  pos_ += got;
  while (got < buf.size()) {
    // Large payloads go straight into the caller's buffer, small remainders
    // through ours so that the next request is read with the same call.
    std::size_t want = buf.size() - got;
    if (want >= capacity_) {
      std::size_t n = source_.read_some(buf.subspan(got));
      if (n == 0) break;
      got += n;
      continue;
    }
    if (!fill()) break;
    std::size_t n = std::min(want, end_);
    std::memcpy(buf.data() + got, buf_.get(), n);
    pos_ = n;
    got += n;
  }
  return got;
}

std::span<const std::byte> BufferedReader::take(std::size_t n) {
  std::size_t pending = end_ - pos_;
  if (n > capacity_) {
    // Room for this record and the next request header behind it.
    std::size_t capacity = n + 64 * 1024;
    std::unique_ptr<std::byte[]> bigger(new std::byte[capacity]);
    if (pending > 0) std::memcpy(bigger.get(), buf_.get() + pos_, pending);
    buf_ = std::move(bigger);
    capacity_ = capacity;
    pos_ = 0;
    end_ = pending;
  } else if (capacity_ - pos_ < n) {
    if (pending > 0) std::memmove(buf_.get(), buf_.get() + pos_, pending);
    pos_ = 0;
    end_ = pending;
  }
  while (end_ - pos_ < n) {
    std::size_t got = source_.read_some(std::span(buf_.get() + end_, capacity_ - end_));
    if (got == 0) break;
    end_ += got;
  }
  std::size_t avail = std::min(n, end_ - pos_);
  std::span<const std::byte> out(buf_.get() + pos_, avail);
  pos_ += avail;
  return out;
}

std::uint64_t BufferedReader::discard(std::uint64_t n) {
  std::uint64_t dropped = 0;
  while (dropped < n) {
    if (pos_ == end_ && !fill()) break;
    std::size_t step = static_cast<std::size_t>(std::min<std::uint64_t>(n - dropped, end_ - pos_));
    pos_ += step;
    dropped += step;
  }
  return dropped;
}

namespace {

struct CommandSpec {
  char letter;
  int lines;                   // argument lines after the command byte
  std::size_t Limits::*limit[2];
};

constexpr std::array<CommandSpec, 11> commands{{
    {'O', 2, {&Limits::device, &Limits::flags}},
    {'C', 1, {&Limits::device, nullptr}},
    {'R', 1, {&Limits::number, nullptr}},
    {'W', 1, {&Limits::number, nullptr}},
    {'L', 2, {&Limits::number, &Limits::number}},
    {'I', 2, {&Limits::number, &Limits::number}},
    {'i', 2, {&Limits::number, &Limits::number}},
    {'S', 0, {nullptr, nullptr}},
    {'s', -1, {nullptr, nullptr}},  // one sub-command byte, no newline
    {'v', 1, {&Limits::device, nullptr}},
    {'V', 1, {&Limits::device, nullptr}},
}};

std::string printable(int c) {
  if (c >= 0x21 && c < 0x7f) return std::string("'") + static_cast<char>(c) + "'";
  char hex[16];
  std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned>(c) & 0xffu);
  return hex;
}

bool is_blank(char c) { return c == ' ' || c == '\t'; }

std::string_view trim_blanks(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

bool read_request(BufferedReader& in, const Limits& limits, Request& out) {
  int c;
  // A stray newline where a command is expected is skipped: FreeBSD dump
  // and newer GNU clients send "S\n" (docs/rmt-protocol.md, "S: status").
  do c = in.get();
  while (c == '\n');
  if (c < 0) return false;
  auto spec = std::find_if(commands.begin(), commands.end(),
                           [c](const CommandSpec& s) { return s.letter == c; });
  if (spec == commands.end())
    throw ProtocolError(ProtocolError::Kind::garbage, "garbage command " + printable(c));
  out.command = spec->letter;
  out.line_count = std::max(spec->lines, 0);
  out.too_long = {false, false};
  if (spec->lines < 0) {
    int sub = in.get();
    if (sub < 0) throw ProtocolError(ProtocolError::Kind::truncated, "end of input in request");
    out.sub = static_cast<char>(sub);
    return true;
  }
  for (int i = 0; i < spec->lines; ++i) {
    auto idx = static_cast<std::size_t>(i);
    bool too_long = false;
    if (!in.read_line(out.lines[idx], limits.*(spec->limit[idx]), limits.drain, too_long))
      throw ProtocolError(ProtocolError::Kind::truncated, "end of input in request");
    out.too_long[idx] = too_long;
  }
  return true;
}

std::optional<std::int64_t> parse_number(std::string_view text) {
  while (!text.empty() && is_blank(text.front())) text.remove_prefix(1);
  bool negative = false;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  if (text.empty() || text.front() < '0' || text.front() > '9') return std::nullopt;
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (negative) {
    if (value > static_cast<std::uint64_t>(INT64_MAX) + 1) return std::nullopt;
    return value == static_cast<std::uint64_t>(INT64_MAX) + 1
               ? INT64_MIN
               : -static_cast<std::int64_t>(value);
  }
  if (value > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
  return static_cast<std::int64_t>(value);
}

namespace {

struct FlagName {
  std::string_view name;
  int value;
  bool access_mode;
};

// GNU's names plus dump's and star's extras; ASYNC, TEXT, PRIV and
// LARGEFILE carry no meaning here and are accepted as no-ops.
constexpr std::array<FlagName, 18> flag_names{{
    {"RDONLY", O_RDONLY, true},     {"WRONLY", O_WRONLY, true},
    {"RDWR", O_RDWR, true},         {"APPEND", O_APPEND, false},
    {"CREAT", O_CREAT, false},      {"DSYNC", O_DSYNC, false},
    {"EXCL", O_EXCL, false},        {"LARGEFILE", 0, false},
    {"NOCTTY", O_NOCTTY, false},    {"NONBLOCK", O_NONBLOCK, false},
    {"NDELAY", O_NDELAY, false},    {"RSYNC", O_RSYNC, false},
    {"SYNC", O_SYNC, false},        {"FSYNC", O_FSYNC, false},
    {"TRUNC", O_TRUNC, false},      {"ASYNC", 0, false},
    {"TEXT", 0, false},             {"PRIV", 0, false},
}};

std::optional<int> parse_symbolic(std::string_view text) {
  int flags = 0;
  int access = -1;
  std::size_t start = 0;
  for (;;) {
    std::size_t bar = text.find('|', start);
    std::string_view item =
        trim_blanks(text.substr(start, bar == std::string_view::npos ? text.npos : bar - start));
    bool last = bar == std::string_view::npos;
    if (item.empty()) {
      // A trailing bar is accepted (every server does); an empty item
      // anywhere else is not.
      if (!last || start == 0) return std::nullopt;
      break;
    }
    if (item.substr(0, 2) == "O_") item.remove_prefix(2);
    auto f = std::find_if(flag_names.begin(), flag_names.end(),
                          [item](const FlagName& n) { return n.name == item; });
    if (f == flag_names.end()) return std::nullopt;
    if (f->access_mode)
      access = access < 0 ? f->value : (access | f->value);
    else
      flags |= f->value;
    if (last) break;
    start = bar + 1;
  }
  if (access < 0) access = O_RDONLY;
  if (access == O_ACCMODE) return std::nullopt;
  return flags | access;
}

}  // namespace

std::optional<int> parse_open_flags(std::string_view text) {
  text = trim_blanks(text);
  if (text.empty()) return std::nullopt;
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  std::optional<int> numeric;
  if (digits > 0) {
    int value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + digits, value);
    if (ec != std::errc()) return std::nullopt;
    numeric = value;
    text.remove_prefix(digits);
    if (!text.empty() && !is_blank(text.front())) return std::nullopt;
    text = trim_blanks(text);
  }
  if (!text.empty()) return parse_symbolic(text);
  if (!numeric) return std::nullopt;
  // Only the access mode means the same on every OS
  // (docs/rmt-protocol.md, "O: open").
  int access = *numeric & O_ACCMODE;
  if (access == O_ACCMODE) return std::nullopt;
  return access;
}

std::string format_open_flags(int flags) {
  int access = flags & O_ACCMODE;
  std::string out = std::to_string(access);
  out += access == O_WRONLY ? " O_WRONLY" : access == O_RDWR ? " O_RDWR" : " O_RDONLY";
  struct Extra {
    int value;
    const char* name;
  };
  static constexpr Extra extras[] = {
      {O_APPEND, "|O_APPEND"}, {O_CREAT, "|O_CREAT"}, {O_EXCL, "|O_EXCL"},
      {O_NOCTTY, "|O_NOCTTY"}, {O_NONBLOCK, "|O_NONBLOCK"}, {O_TRUNC, "|O_TRUNC"},
  };
  for (const auto& e : extras)
    if (flags & e.value) out += e.name;
  if ((flags & O_SYNC) == O_SYNC)
    out += "|O_SYNC";
  else if (flags & O_DSYNC)
    out += "|O_DSYNC";
  return out;
}

namespace {

std::optional<int> seek_keyword(std::string_view text) {
  text = trim_blanks(text);
  if (text.substr(0, 5) == "SEEK_") text.remove_prefix(5);
  if (text == "SET") return 0;
  if (text == "CUR") return 1;
  if (text == "END") return 2;
  return std::nullopt;
}

bool in_set(std::int64_t v, std::initializer_list<std::int64_t> set) {
  return std::find(set.begin(), set.end(), v) != set.end();
}

std::optional<int> as_whence(std::int64_t v) {
  if (v < INT32_MIN || v > INT32_MAX) return std::nullopt;
  return static_cast<int>(v);
}

}  // namespace

std::optional<SeekArgs> decode_seek(std::string_view a, std::string_view b, SeekOrder order) {
  auto ka = seek_keyword(a);
  auto kb = seek_keyword(b);
  if (ka && kb) return std::nullopt;
  if (ka || kb) {
    auto offset = parse_number(ka ? b : a);
    if (!offset) return std::nullopt;
    return SeekArgs{*offset, ka ? *ka : *kb};
  }
  auto na = parse_number(a);
  auto nb = parse_number(b);
  if (!na || !nb) return std::nullopt;
  bool bsd = true;
  switch (order) {
    case SeekOrder::bsd: bsd = true; break;
    case SeekOrder::gnu: bsd = false; break;
    case SeekOrder::automatic:
      // The only reading that a real client could have meant
      // (docs/rmt-protocol.md, "L: seek").
      if (!in_set(*na, {0, 1, 2}))
        bsd = true;
      else if (!in_set(*nb, {0, 1, 2, 3, 4, 10, 11}))
        bsd = false;
      else if (*na == *nb || *na == 0)
        bsd = true;
      else if (*nb == 0)
        bsd = false;
      else
        bsd = true;
      break;
  }
  auto whence = as_whence(bsd ? *nb : *na);
  if (!whence) return std::nullopt;
  return SeekArgs{bsd ? *na : *nb, *whence};
}

namespace {
// BSD/Sun numbering (docs/rmt-protocol.md, "I: tape operation"), by wire
// number, and the Linux op codes they mean.
constexpr std::array<int, 11> v1_to_linux{MTWEOF, MTFSF,  MTBSF,  MTFSR,   MTBSR,  MTREW,
                                          MTOFFL, MTNOP,  MTRETEN, MTERASE, MTEOM};
// The "i" requests' wire numbers and the Linux op codes they mean.
constexpr std::array<std::pair<int, int>, 3> extended_to_linux{
    {{2, MTRETEN}, {3, MTERASE}, {4, MTEOM}}};
}  // namespace

std::optional<int> linux_op_from_v1(std::int64_t wire) {
  if (wire < 0 || wire >= static_cast<std::int64_t>(v1_to_linux.size())) return std::nullopt;
  return v1_to_linux[static_cast<std::size_t>(wire)];
}

std::optional<int> v1_op_from_linux(int linux_op) {
  auto it = std::find(v1_to_linux.begin(), v1_to_linux.end(), linux_op);
  if (it == v1_to_linux.end()) return std::nullopt;
  return static_cast<int>(it - v1_to_linux.begin());
}

std::optional<int> linux_op_from_extended(std::int64_t wire) {
  for (auto [w, l] : extended_to_linux)
    if (w == wire) return l;
  return std::nullopt;
}

std::optional<int> extended_op_from_linux(int linux_op) {
  for (auto [w, l] : extended_to_linux)
    if (l == linux_op) return w;
  return std::nullopt;
}

bool answers_as_line_reader(const Reply& reply) {
  // GNU rmt's words for a count it cannot parse; a BSD-lineage server's
  // error text is strerror(), which never says this.
  return !reply.ok && reply.errnum == EINVAL && reply.text == "Invalid byte count";
}

namespace {

template <class Number>
void append_ok_number(std::string& out, Number value) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  out += 'A';
  out.append(buf, end);
  out += '\n';
}

}  // namespace

void append_ok(std::string& out, std::uint64_t value) { append_ok_number(out, value); }

void append_ok_signed(std::string& out, std::int64_t value) { append_ok_number(out, value); }

void append_error(std::string& out, int errnum, std::string_view text) {
  // star's client takes at most 80 bytes per line, so keep the text short,
  // ASCII and on one line; errno 0 would read as success to GNU 1.34.
  if (errnum <= 0) errnum = EIO;
  out += 'E';
  out += std::to_string(errnum);
  out += '\n';
  std::size_t kept = 0;
  for (char c : text) {
    if (kept == 78) break;
    out += (c >= 0x20 && c < 0x7f) ? c : '?';
    ++kept;
  }
  out += '\n';
}

Reply read_reply(BufferedReader& in, ReplyValue value) {
  std::string line;
  bool too_long = false;
  bool complete = false;
  try {
    complete = in.read_line(line, 63, 63, too_long);
  } catch (const ProtocolError&) {
    throw ProtocolError(ProtocolError::Kind::bad_reply, "reply line too long");
  }
  if (!complete) throw ProtocolError(ProtocolError::Kind::truncated, "connection lost");
  std::string_view s = line;
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  if (s.empty()) throw ProtocolError(ProtocolError::Kind::bad_reply, "empty reply");
  char kind = s.front();
  auto number = parse_number(s.substr(1));
  Reply r;
  if (kind == 'A' && number) {
    if (*number < 0 && value == ReplyValue::count)
      throw ProtocolError(ProtocolError::Kind::bad_reply,
                          "negative count in reply (" + std::string(s) + ")");
    r.ok = true;
    r.value = *number;
    return r;
  }
  if ((kind == 'E' || kind == 'F') && number) {
    r.fatal = kind == 'F';
    r.errnum = *number > 0 && *number < 4096 ? static_cast<int>(*number) : EIO;
    if (!in.read_line(r.text, 256, 8192, too_long))
      throw ProtocolError(ProtocolError::Kind::truncated, "connection lost");
    // The line ends up in messages on a terminal: a server must not be able
    // to start a line of its own there or send an escape sequence.
    r.text = printable_text(r.text);
    return r;
  }
  throw ProtocolError(ProtocolError::Kind::bad_reply, "unexpected reply");
}

}  // namespace tk::rmt
