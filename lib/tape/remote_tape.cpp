// The rmt client: a Tape whose every call is one request on the control link.
// This file holds its construction and open, close, the tape operations and
// status; the other concerns have files of their own: remote_link.cpp (one
// link's requests and replies), remote_pipeline.cpp (pipelined writes and
// settling), remote_read_ahead.cpp and remote_streams.cpp.
#include "remote_tape.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fcntl.h>
#include <unistd.h>
#include <utility>

#include "../scsi/sg_io.hpp"
#include "open_wait.hpp"
#include "remote_internal.hpp"

namespace tk {

using detail::initial_read_window;
using detail::initial_write_window;
using detail::register_bits;

namespace {

std::vector<std::string> split_blanks(const std::string& s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    std::size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t') ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

// secure_getenv: a setuid program must not run a remote shell named by the
// environment (CVE-2022-37704; docs/rmt-protocol.md, "The client's rules").
std::string pick(const std::string& option, const char* env, const char* fallback) {
  if (!option.empty()) return option;
  if (const char* v = ::secure_getenv(env); v != nullptr && *v != '\0') return v;
  return fallback;
}

// How long status() waits for the S reply of a server that did not answer
// as GNU rmt does before sending the newline a server that reads lines
// waits for.
constexpr int s_reply_wait_ms = 2000;

bool shell_safe(const std::string& s) {
  return !s.empty() && s.front() != '-' &&
         std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '-' || c == '_' || c == '[' || c == ']' || c == '%';
         });
}

}  // namespace

RemoteName parse_remote_name(const std::string& name) {
  auto colon = name.find(':');
  if (colon == std::string::npos) throw Error(EINVAL, "open " + name + ": not a remote name");
  RemoteName r;
  r.host = name.substr(0, colon);
  r.path = name.substr(colon + 1);
  if (auto at = r.host.find('@'); at != std::string::npos) {
    r.user = r.host.substr(0, at);
    r.host = r.host.substr(at + 1);
    if (!shell_safe(r.user)) throw Error(EINVAL, "open " + name + ": bad user name");
  }
  if (!shell_safe(r.host)) throw Error(EINVAL, "open " + name + ": bad host name");
  // A newline would end the O request early and inject protocol lines.
  if (r.path.empty() || r.path.find_first_of(std::string("\n\0", 2)) != std::string::npos)
    throw Error(ENOENT, "open " + name);
  return r;
}

RemoteTape::RemoteTape(const std::string& name, int flags, const OpenOptions& options)
    : Tape(name), write_window_(initial_write_window), read_window_(initial_read_window) {
  RemoteName rn = parse_remote_name(name);
  options_ = options;
  flags_ = flags;
  connect_timeout_ = timeout_seconds(options.connect_timeout, "TAPEKIT_CONNECT_TIMEOUT",
                                     default_connect_timeout);
  open_timeout_ = timeout_seconds(options.open_timeout, "TAPEKIT_OPEN_TIMEOUT", 0);
  pipelined_writes_ = options.pipelined_writes;
  streams_wanted_ = std::clamp(options.streams, 0, static_cast<int>(rmt::max_streams));
  stream_rate_ = options.stream_rate;
  warn_ = options.warn;
  argv_ = split_blanks(pick(options.rsh_command, "RSH", "ssh"));
  if (argv_.empty()) throw Error(EINVAL, "open " + name + ": empty remote shell command");
  argv_.push_back(rn.host);
  if (!rn.user.empty()) {
    argv_.push_back("-l");
    argv_.push_back(rn.user);
  }
  const std::string rmt_command = pick(options.rmt_command, "RMT", "/etc/rmt");
  argv_.push_back(rmt_command);
  host_ = rn.host;
  shell_ = "remote shell " + argv_.front() + " for " + rn.host;
  streams_.push_back(open_stream());
  // "Connected" means rmt answered: a remote shell that never starts the
  // server (a host that is down, a stuck login) must not hang us. Opening
  // the device is the drive's time, not the connection's (below).
  connecting_ = true;
  streams_[0].source->set_timeout(connect_timeout_ > 0 ? connect_timeout_ * 1000 : -1);
  // Streams need the pipeline, which writes forgo without pipelined_writes.
  const bool streams_possible =
      streams_wanted_ != 1 && ((flags & O_ACCMODE) == O_RDONLY || pipelined_writes_);
  try {
    // A count given: the other shells log in beside the first one, whose
    // login and first exchange would otherwise come before theirs (about
    // half a second over ssh). They are let go if the rmt is not tapekit's.
    // `auto` needs the first connection's round trip before it can count.
    if (streams_possible && streams_wanted_ > 1) start_streams(/*hold_stderr=*/true);
    if (!options.plain_remote && rn.path.ends_with(".tap")) {
      // Asked before O, since O would already create the file: I-1 and i
      // need no open device (our rmt answers them, others refuse harmlessly).
      if (!server_is_tapekit("open")) {
        hang_up();
        throw Error(EMEDIUMTYPE,
                    "open " + name + ": the rmt on " + rn.host + " (" + rmt_command +
                        ") is not tapekit's, so " + rn.path +
                        " would be a plain file there, not a virtual tape (point "
                        "--rmt-command or RMT at tapekit's rmt, or use --plain-remote to "
                        "open it as a plain file)");
      }
      version_ = Version::unknown;  // O starts the server's numbering afresh
    }
    if (streams_possible) {
      if (!server_is_tapekit("open"))
        end_joiners(joiners_);
      else if (joiners_.empty())
        start_streams();
      version_ = Version::unknown;
    }
    // rmt's first answer ends the connect timeout. For a name no probe
    // above reached, a read of nothing: every server answers it (E9, no
    // device is open) and none changes for it (I-1 would switch rmt-dump to
    // version 1 numbering for the whole session, which O does not undo).
    if (!tapekit_.has_value()) {
      send("R0\n", "open");
      (void)receive("open");
    }
    wait_for_the_open();
    request_ = "O" + rn.path + "\n" + rmt::format_open_flags(flags) + "\n";
    // The session pipelines from its first W or R when the rmt is ours and
    // streams are asked for, or records are written: agreed with the open.
    const bool writing = (flags & O_ACCMODE) == O_WRONLY;
    const bool agree_now = tapekit_.value_or(false) && (streams_possible || (writing && pipelined_writes_));
    // Streams are read ahead, as both tools that take them read.
    if (agree_now && streams_possible && (flags & O_ACCMODE) == O_RDONLY) read_ahead_wanted_ = true;
    open_request(request_, agree_now);
  } catch (...) {
    hang_up();
    throw;
  }
  opening_ = false;
  streams_[0].source->set_timeout(-1);
  streams_[0].source->set_wait_note({});
  open_ = true;
}

void RemoteTape::wait_for_the_open() {
  connecting_ = false;
  opening_ = true;
  rmt::FdSource& source = *streams_[0].source;
  source.set_timeout(open_timeout_ > 0 ? open_timeout_ * 1000 : -1);
  // A person at a terminal learns that the drive is still opening (an LTO
  // loading takes up to a minute), not a hung backup; a script hears nothing.
  if (::isatty(STDERR_FILENO) == 1) {
    const std::string name = this->name();
    source.set_wait_note([name](std::chrono::seconds waited) {
      const std::string line =
          "waiting for " + name + " to open, " + std::to_string(waited.count()) + " s\n";
      (void)!::write(STDERR_FILENO, line.data(), line.size());
    });
  }
}

RemoteTape::~RemoteTape() {
  if (open_ && !broken_) {
    try {
      settle("close");
    } catch (const Error&) {
      // As below: close() is the way to hear about records that were lost.
    }
  }
  if (open_ && !broken_) {
    try {
      send_close();
    } catch (const Error&) {
      // The destructor closes quietly; close() is the way to hear about it.
    }
  }
  hang_up(broken_);
}

void RemoteTape::send_close() {
  send("C\n", "close");
  // Nothing follows C: the servers see the end of their input now, so
  // their shells end a round trip sooner, as the reply travels.
  for (Stream& s : streams_) s.link.to_child = Fd();
  rmt::Reply r = receive("close");
  if (!r.ok) throw Error(r.errnum, "close " + name());
}

std::size_t RemoteTape::read(std::span<std::byte> buf) {
  if (!writes_in_flight_.empty()) settle("read");
  reading_ = true;
  if (read_ahead_wanted_ && !buf.empty()) {
    agree_pipeline("read");
    if (pipelined_) return read_ahead(buf);
  }
  // Plain reads take no streams.
  end_joiners(joiners_);
  if (reads_in_flight_ > 0) settle_reads("read");
  if (server_stopped_) acknowledge_stop();
  request_ = "R" + std::to_string(buf.size()) + "\n";
  send(request_, "read");
  return take_read_reply(buf);
}

std::size_t RemoteTape::take_read_reply(std::span<std::byte> buf) {
  rmt::Reply r = receive("read");
  if (!r.ok || r.value == 0) {
    // The server now cancels reads until told it is known (protocol.hpp).
    server_stopped_ = pipelined_;
    reads_ended_ = reads_in_flight_ > 0;
  }
  if (!r.ok) throw Error(r.errnum, "read " + name());
  // A server sending more than asked would overflow the caller's buffer
  // (CVE-2010-0624); the stream cannot be resynchronised after it.
  if (static_cast<std::uint64_t>(r.value) > buf.size())
    lose_connection("read", "server sent " + std::to_string(r.value) + " bytes for " +
                                std::to_string(buf.size()));
  auto n = static_cast<std::size_t>(r.value);
  std::size_t got = 0;
  const std::size_t stream = (taken_ - 1) % streams_.size();
  try {
    got = reply_in_->read_exact(buf.first(n));
  } catch (const Interrupted&) {
    // A stop, as in receive(): the rest of the record may still come, so
    // the session cannot go on, and close() hangs up at once; the link is
    // not lost, and a server that hung would not let its shell end.
    broken_ = true;
    throw;
  } catch (const Error& e) {
    lose_connection("read", e.what(), stream);
  }
  if (got < n) lose_connection("read", "connection lost", stream);
  if (n > 0) ++records_read_;
  return n;
}

void RemoteTape::write(std::span<const std::byte> data) {
  if (reads_in_flight_ > 0) settle_reads("write");
  reading_ = false;
  if (pipelined_writes_) agree_pipeline("write");
  if (pipelined_ && pipelined_writes_) return write_pipelined(data);
  request_ = "W" + std::to_string(data.size()) + "\n";
  send(request_, "write", data);
  rmt::Reply r = receive("write");
  if (!r.ok) throw Error(r.errnum, "write " + name());
  ++records_on_tape_;
  const auto written = static_cast<std::size_t>(
      std::min<std::int64_t>(r.value, static_cast<std::int64_t>(data.size())));
  bytes_on_tape_ += written;
  if (written != data.size()) throw Error(ENOSPC, "write " + name(), written);
}

void RemoteTape::op(MtOp op, int count) {
  settle("tape operation on");
  int linux_op = static_cast<int>(op);
  // An op that v1 cannot express goes out raw without a probe, so that a
  // Linux rmt-dump (which maps only 0..10 once switched to v1) still takes
  // "compression" or "setblk" as GNU mt would send them.
  bool portable = rmt::v1_op_from_linux(linux_op) || rmt::extended_op_from_linux(linux_op);
  if (version_ == Version::unknown && !portable) version_ = Version::v0;
  probe_version();
  std::string action = "tape operation on";
  if (version_ == Version::v0) {
    // A server without v1 takes the client's numbers: Linux ones
    // (docs/rmt-protocol.md, "I: tape operation").
    request_ = "I" + std::to_string(linux_op) + "\n" + std::to_string(count) + "\n";
  } else if (auto w = rmt::v1_op_from_linux(linux_op)) {
    request_ = "I" + std::to_string(*w) + "\n" + std::to_string(count) + "\n";
  } else if (auto e = rmt::extended_op_from_linux(linux_op)) {
    request_ = "i" + std::to_string(*e) + "\n" + std::to_string(count) + "\n";
  } else if (linux_op > 10) {
    // Above the v1 range our server takes raw Linux numbers; others refuse.
    request_ = "I" + std::to_string(linux_op) + "\n" + std::to_string(count) + "\n";
  } else {
    throw Error(EINVAL, action + " " + name() + " (no portable rmt op code)");
  }
  transact(request_, action);
}

TapeStatus RemoteTape::status() {
  settle("status");
  probe_version("status", true);
  if (version_ == Version::v1) {
    // One field at a time; the error register first, since some drivers
    // clear it when it is read (docs/rmt-protocol.md, "s: one status field").
    // Each is the server's mtget field as it is, so it may be negative: st's -1
    // for a file or block number it does not know (at end of data, with no
    // tape, while not ready), and a register with its top bit set (EOF in
    // mt_gstat, a density code from 0x80 in mt_dsreg) from a server whose long
    // has 32 bits.
    MtGet m;
    struct Field {
      char sub;
      std::int64_t MtGet::*value;
      bool may_be_unknown;
      bool is_register;
    };
    static constexpr Field fields[] = {
        {'E', &MtGet::erreg, false, true}, {'T', &MtGet::type, false, false},
        {'D', &MtGet::dsreg, false, true}, {'R', &MtGet::resid, true, false},
        {'f', &MtGet::gstat, false, true},
    };
    for (const auto& f : fields) {
      send(std::string("s") + f.sub, "status");
      rmt::Reply r = receive("status", rmt::ReplyValue::field);
      if (r.ok)
        m.*(f.value) = f.is_register ? register_bits(r.value) : r.value;
      else if (!f.may_be_unknown)
        throw Error(r.errnum, "tape status of " + name());
    }
    for (char sub : {'F', 'B'}) {
      send(std::string("s") + sub, "status");
      rmt::Reply r = receive("status", rmt::ReplyValue::field);
      // Any negative number, or none, is st's "unknown" (-1).
      std::int32_t v = r.ok && r.value >= 0
                           ? static_cast<std::int32_t>(std::min<std::int64_t>(r.value, INT32_MAX))
                           : -1;
      (sub == 'F' ? m.fileno : m.blkno) = v;
    }
    TapeStatus s = status_from_mtget(m);
    // struct mtget has no compression bit; tapekit's rmt tells it apart.
    if (server_is_tapekit("status")) {
      send(std::string("s") + rmt::tapekit_compression_field, "status");
      rmt::Reply r = receive("status");
      if (r.ok) {
        s.compression = r.value != 0;
        s.compression_known = true;
      }
    }
    return s;
  }
  return status_from_struct();
}

TapeStatus RemoteTape::status_from_struct() {
  // Only servers without v1 are asked S, so there is one stream.
  Stream& only = streams_[0];
  if (status_framing_ == StatusFraming::unknown) {
    // The version was known before status was asked (an op probed it): the
    // question goes with S, which GNU rmt then waits to see the end of.
    send(std::string(rmt::line_reader_probe) + "S", "status");
    ++sent_;  // two requests in one write
    take_framing_reply("status");
    if (status_framing_ == StatusFraming::line) {
      send("\n", "status");
      --sent_;  // the newline was part of the S request
    }
  } else {
    send(status_framing_ == StatusFraming::line ? "S\n" : "S", "status");
  }
  rmt::Reply r;
  if (status_framing_ == StatusFraming::byte && !only.in->buffered()) {
    // A server that did not answer as GNU rmt does but still waits for a
    // newline after S (another rmt that reads lines) gets one if no reply
    // comes; a BSD-lineage server has answered by then.
    only.source->set_timeout(s_reply_wait_ms);
    try {
      r = rmt::read_reply(*only.in);
      ++taken_;
      only.source->set_timeout(-1);
    } catch (const Error& e) {
      only.source->set_timeout(-1);
      if (e.errnum() != ETIMEDOUT) lose_connection("status", "connection lost");
      send("\n", "status");
      --sent_;  // the newline was part of the S request
      r = receive("status");
    }
  } else {
    r = receive("status");
  }
  if (!r.ok) throw Error(r.errnum, "tape status of " + name());
  if (r.value > 4096) lose_connection("status", "oversized status reply");
  std::string raw(static_cast<std::size_t>(r.value), '\0');
  auto bytes = std::as_writable_bytes(std::span(raw.data(), raw.size()));
  if (only.in->read_exact(bytes) < raw.size()) lose_connection("status", "connection lost");
  // Only a v1 server that took the framing probe for its version probe
  // (the client kept raw op numbers) gets here speaking v1: dump's rmt then
  // swaps the fields, tapekit's keeps them. Asked after the reply, so the
  // exchange stays one request, one answer.
  MtGetOrder order = MtGetOrder::little_endian;
  if (framing_probe_answered_v1_) {
    if (!tapekit_) {
      send("i" + std::to_string(rmt::tapekit_identify_op) + "\n0\n", "status");
      rmt::Reply r2 = receive("status");
      tapekit_ = r2.ok && r2.value == rmt::tapekit_identify_op;
    }
    if (!*tapekit_) order = MtGetOrder::dump_v1;
  }
  auto m = decode_mtget(bytes, order);
  if (!m) throw Error(EPROTO, "tape status of " + name() + " (" + std::to_string(raw.size()) +
                                  "-byte struct mtget not understood)");
  return status_from_mtget(*m);
}

std::int64_t RemoteTape::tell() {
  settle("tape position of");
  // dump's QFA request, L with whence 10. GNU rmt would take it for an
  // absolute seek, and dump's rmt first switches an st drive to SCSI-2
  // logical addresses with MTSETDRVBUFFER(MT_ST_BOOLEANS|...), which clears
  // every other boolean driver option (buffered writes, read-ahead, ...)
  // until the next stinit: a question must not do that. Only ours is asked.
  if (!server_is_tapekit())
    throw Error(ENOTTY, "tape position of " + name() +
                            (version_ == Version::v1
                                 ? " (only tapekit's rmt answers it; dump's rmt would reset the drive's options)"
                                 : " (server has no position request)"));
  // Not dump's QFA request, which a file answers with its offset (for
  // restore): mt-st's tell fails on a file, and asking status first would
  // clear a drive's error register.
  return transact("i" + std::to_string(rmt::tapekit_position_op) + "\n0\n", "tape position of");
}

std::vector<std::uint8_t> RemoteTape::health_data(scsi::HealthQuery query) {
  const std::string action = "drive health of";
  settle(action);
  const scsi::Cdb cdb = scsi::health_cdb(query);
  // With the version, whether a server without v1 reads lines (GNU rmt):
  // one round trip, and the refusal can name the server.
  probe_version(action, true);
  if (!server_is_tapekit(action)) {
    std::string server = version_ == Version::v1 ? "a version 1 rmt that is not tapekit's (dump's or star's)"
                         : status_framing_ == StatusFraming::line
                             ? "GNU tar's rmt (rmt-tar)"
                             : "an rmt without protocol version 1 (BSD's or alike)";
    throw scsi::ScsiError(ENOTTY, scsi::Refusal::other_server, cdb.what,
                          "the server on " + host_ + " is " + server +
                              ", which cannot report drive health (tapekit's rmt can: point "
                              "--rmt-command or RMT at it)");
  }
  send("i" + std::to_string(rmt::tapekit_health_op) + "\n" +
           std::to_string(static_cast<int>(query)) + "\n",
       action);
  rmt::Reply r = receive(action);
  // A server from before the question says so in its own words: the
  // drive may well have the answer, so this is no refusal of the drive's.
  if (!r.ok && r.errnum == EINVAL && r.text == rmt::unknown_health_query_text)
    throw scsi::ScsiError(r.errnum, scsi::Refusal::unknown_query, cdb.what,
                          "the server on " + host_ + " is an older tapekit rmt, which cannot ask it");
  if (!r.ok)
    throw scsi::ScsiError(r.errnum, scsi::refusal_for_errno(r.errnum), cdb.what, r.text);
  if (static_cast<std::uint64_t>(r.value) > rmt::max_health_data)
    lose_connection(action, "oversized drive health reply");
  std::vector<std::uint8_t> data(static_cast<std::size_t>(r.value));
  auto bytes = std::as_writable_bytes(std::span(data.data(), data.size()));
  if (reply_in_->read_exact(bytes) < data.size()) lose_connection(action, "connection lost");
  return data;
}

std::int64_t RemoteTape::seek(std::int64_t offset, int whence) {
  settle("seek");
  // The servers that speak v1 (ours, rmt-dump, star) read the offset first;
  // of the others, GNU rmt, the one a Linux host has, reads the whence
  // first (docs/rmt-protocol.md, "L: seek"). Only BSD's own rmt is left out:
  // it has no v1 either.
  probe_version();
  if (version_ == Version::v1 && whence == SEEK_SET && (offset == 1 || offset == 2)) {
    // "L1\n0\n" and "L2\n0\n" read as whence-first to a server that infers
    // the order (tar never seeks to byte 1 or 2), so get there in two
    // steps whose reading is the same in both orders.
    transact("L0\n0\n", "seek");
    return transact("L" + std::to_string(offset) + "\n1\n", "seek");
  }
  std::string o = std::to_string(offset);
  std::string w = std::to_string(whence);
  request_ = version_ == Version::v1 ? "L" + o + "\n" + w + "\n" : "L" + w + "\n" + o + "\n";
  return transact(request_, "seek");
}

void RemoteTape::close() {
  if (!open_) return;
  if (broken_) {
    // A stop cut a request or a reply short: nothing more can be asked,
    // and a server that stopped answering would not see its end of input
    // either, so its shells are ended at once. The writes still in flight
    // stay counted (writes_in_flight()): whether they reached the tape is
    // not known.
    hang_up(true);
    std::string text = "close " + name() + ": the session was cut short by a stop";
    if (!writes_in_flight_.empty())
      text += "; at least " + std::to_string(records_on_tape_) +
              " records are on the tape, up to " + std::to_string(writes_in_flight_.size()) +
              " more may be";
    throw Error(EIO, text);
  }
  // Records the tape turns out not to have taken are reported once the
  // tape is closed (with its filemark), so the caller may go on elsewhere.
  std::exception_ptr unwritten = std::exchange(settle_failure_, nullptr);  // or any other failure to settle
  try {
    if (!unwritten) settle("close");
  } catch (const Error&) {
    unwritten = std::current_exception();
  }
  if (!open_) std::rethrow_exception(unwritten);  // the connection is gone
  open_ = false;
  std::int64_t ok = 0;
  int err = 0;
  try {
    send_close();
    ok = 1;
  } catch (const Error& e) {
    err = e.errnum();
  }
  hang_up();
  if (unwritten) std::rethrow_exception(unwritten);
  if (!ok) throw Error(err, "close " + name());
}

bool RemoteTape::settle_before_close() noexcept {
  if (!open_ || broken_ || settle_failure_) return false;
  try {
    settle("close");
    return true;
  } catch (...) {
    settle_failure_ = std::current_exception();  // for close() to throw
  }
  return false;
}

void RemoteTape::open_request(const std::string& request, bool agree_now) {
  if (!agree_now) {
    transact(request, "open");
    return;
  }
  // Our rmt answers them in turn: a failed O leaves no tape, which the
  // streams request is then refused for; the pipeline alone changes
  // nothing until a W or R.
  const bool ask_streams = !joiners_.empty();
  std::string batch = request + pipeline_request();
  if (ask_streams) batch += streams_request();
  send(batch, "open");
  sent_ += ask_streams ? 2 : 1;
  rmt::Reply opened = receive("open");
  if (!opened.ok) throw Error(opened.errnum, "open " + name());
  take_pipeline_reply("open");
  if (!pipelined_) {
    if (ask_streams) receive("open");  // refused as well: an rmt from before the pipeline
    end_joiners(joiners_);
    return;
  }
  if (ask_streams) take_streams_reply("open");
}

}  // namespace tk
