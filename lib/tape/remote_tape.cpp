// The rmt client as a Tape: its construction and open, close, the tape
// operations and status, over the parts it composes (remote_link.cpp,
// remote_streams.cpp, remote_pipeline.cpp and remote_read_ahead.cpp), and
// what a lost connection or stream means for the session as a whole.
#include "remote_tape.hpp"

#include <algorithm>
#include <cerrno>
#include <exception>
#include <fcntl.h>
#include <utility>

#include "../scsi/sg_io.hpp"
#include "remote_internal.hpp"

namespace tk {

using detail::register_bits;

RemoteTape::RemoteTape(const std::string& name, int flags, const OpenOptions& options)
    : Tape(name),
      link_(name, options, *this),
      streams_(link_, options),
      pipeline_(link_, streams_, *this),
      options_(options),
      flags_(flags) {
  const RemoteName& rn = link_.remote();
  const bool streams_possible = streams_.wanted() != 1;
  try {
    // A count given: the other shells log in beside the first one, whose
    // login and first exchange would otherwise come before theirs (about
    // half a second over ssh). They are let go if the rmt is not tapekit's.
    // `auto` needs the first connection's round trip before it can count.
    if (streams_possible && streams_.wanted() > 1) streams_.start(/*hold_stderr=*/true);
    if (!options.plain_remote && rn.path.ends_with(".tap")) {
      // Asked before O, since O would already create the file: I-1 and i
      // need no open device (our rmt answers them, others refuse harmlessly).
      if (!link_.server_is_tapekit("open")) {
        hang_up();
        throw Error(EMEDIUMTYPE,
                    "open " + name + ": the rmt on " + rn.host + " (" + link_.rmt_command() +
                        ") is not tapekit's, so " + rn.path +
                        " would be a plain file there, not a virtual tape (point "
                        "--rmt-command or RMT at tapekit's rmt, or use --plain-remote to "
                        "open it as a plain file)");
      }
      link_.forget_version();  // O starts the server's numbering afresh
    }
    if (streams_possible) {
      if (!link_.server_is_tapekit("open"))
        streams_.end_joiners();
      else if (!streams_.joining())
        streams_.start();
      link_.forget_version();
    }
    // rmt's first answer ends the connect timeout. For a name no probe
    // above reached, a read of nothing: every server answers it (E9, no
    // device is open) and none changes for it (I-1 would switch rmt-dump to
    // version 1 numbering for the whole session, which O does not undo).
    if (!link_.tapekit().has_value()) {
      link_.send("R0\n", "open");
      (void)link_.receive("open");
    }
    link_.wait_for_the_open();
    request_ = "O" + rn.path + "\n" + rmt::format_open_flags(flags) + "\n";
    // The session pipelines from its first W or R when the rmt is ours and
    // streams are asked for, or records are written: agreed with the open.
    const bool writing = (flags & O_ACCMODE) == O_WRONLY;
    const bool agree_now = link_.tapekit().value_or(false) && (streams_possible || writing);
    // Streams are read ahead, as both tools that take them read.
    if (agree_now && streams_possible && (flags & O_ACCMODE) == O_RDONLY) pipeline_.want_read_ahead();
    open_request(request_, agree_now);
  } catch (...) {
    hang_up();
    throw;
  }
  link_.opened();
  open_ = true;
}

RemoteTape::~RemoteTape() {
  if (open_ && !link_.broken()) {
    try {
      pipeline_.settle("close");
    } catch (const Error&) {
      // As below: close() is the way to hear about records that were lost.
    }
  }
  if (open_ && !link_.broken()) {
    try {
      send_close();
    } catch (const Error&) {
      // The destructor closes quietly; close() is the way to hear about it.
    }
  }
  hang_up(link_.broken());
}

int RemoteTape::hang_up(bool at_once, std::size_t which) noexcept {
  open_ = false;
  streams_.end_joiners();
  return link_.hang_up(at_once, which);
}

void RemoteTape::send_close() {
  link_.send("C\n", "close");
  // Nothing follows C: the servers see the end of their input now, so
  // their shells end a round trip sooner, as the reply travels.
  link_.close_requests();
  rmt::Reply r = link_.receive("close");
  if (!r.ok) throw Error(r.errnum, "close " + name());
}

void RemoteTape::open_request(const std::string& request, bool agree_now) {
  if (agree_now)
    pipeline_.agree_with_open(request);
  else
    link_.transact(request, "open");
}

void RemoteTape::op(MtOp op, int count) {
  pipeline_.settle("tape operation on");
  int linux_op = static_cast<int>(op);
  // An op that v1 cannot express goes out raw without a probe, so that a
  // Linux rmt-dump (which maps only 0..10 once switched to v1) still takes
  // "compression" or "setblk" as GNU mt would send them.
  bool portable = rmt::v1_op_from_linux(linux_op) || rmt::extended_op_from_linux(linux_op);
  if (link_.version() == RemoteLink::Version::unknown && !portable) link_.assume_v0();
  link_.probe_version();
  std::string action = "tape operation on";
  if (link_.version() == RemoteLink::Version::v0) {
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
  link_.transact(request_, action);
}

TapeStatus RemoteTape::status() {
  pipeline_.settle("status");
  link_.probe_version("status", true);
  if (link_.version() != RemoteLink::Version::v1) return status_from_mtget(link_.status_struct());
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
    link_.send(std::string("s") + f.sub, "status");
    rmt::Reply r = link_.receive("status", rmt::ReplyValue::field);
    if (r.ok)
      m.*(f.value) = f.is_register ? register_bits(r.value) : r.value;
    else if (!f.may_be_unknown)
      throw Error(r.errnum, "tape status of " + name());
  }
  for (char sub : {'F', 'B'}) {
    link_.send(std::string("s") + sub, "status");
    rmt::Reply r = link_.receive("status", rmt::ReplyValue::field);
    // Any negative number, or none, is st's "unknown" (-1).
    std::int32_t v = r.ok && r.value >= 0
                         ? static_cast<std::int32_t>(std::min<std::int64_t>(r.value, INT32_MAX))
                         : -1;
    (sub == 'F' ? m.fileno : m.blkno) = v;
  }
  TapeStatus s = status_from_mtget(m);
  // struct mtget has no compression bit; tapekit's rmt tells it apart.
  if (link_.server_is_tapekit("status")) {
    link_.send(std::string("s") + rmt::tapekit_compression_field, "status");
    rmt::Reply r = link_.receive("status");
    if (r.ok) {
      s.compression = r.value != 0;
      s.compression_known = true;
    }
  }
  return s;
}

std::int64_t RemoteTape::tell() {
  pipeline_.settle("tape position of");
  // dump's QFA request, L with whence 10. GNU rmt would take it for an
  // absolute seek, and dump's rmt first switches an st drive to SCSI-2
  // logical addresses with MTSETDRVBUFFER(MT_ST_BOOLEANS|...), which clears
  // every other boolean driver option (buffered writes, read-ahead, ...)
  // until the next stinit: a question must not do that. Only ours is asked.
  if (!link_.server_is_tapekit())
    throw Error(ENOTTY, "tape position of " + name() +
                            (link_.version() == RemoteLink::Version::v1
                                 ? " (only tapekit's rmt answers it; dump's rmt would reset the drive's options)"
                                 : " (server has no position request)"));
  // Not dump's QFA request, which a file answers with its offset (for
  // restore): mt-st's tell fails on a file, and asking status first would
  // clear a drive's error register.
  return link_.transact("i" + std::to_string(rmt::tapekit_position_op) + "\n0\n", "tape position of");
}

std::vector<std::uint8_t> RemoteTape::health_data(scsi::HealthQuery query) {
  const std::string action = "drive health of";
  pipeline_.settle(action);
  const scsi::Cdb cdb = scsi::health_cdb(query);
  // With the version, whether a server without v1 reads lines (GNU rmt):
  // one round trip, and the refusal can name the server.
  link_.probe_version(action, true);
  const std::string& host = link_.remote().host;
  if (!link_.server_is_tapekit(action)) {
    std::string server = link_.version() == RemoteLink::Version::v1
                             ? "a version 1 rmt that is not tapekit's (dump's or star's)"
                         : link_.status_framing() == RemoteLink::StatusFraming::line
                             ? "GNU tar's rmt (rmt-tar)"
                             : "an rmt without protocol version 1 (BSD's or alike)";
    throw scsi::ScsiError(ENOTTY, scsi::Refusal::other_server, cdb.what,
                          "the server on " + host + " is " + server +
                              ", which cannot report drive health (tapekit's rmt can: point "
                              "--rmt-command or RMT at it)");
  }
  link_.send("i" + std::to_string(rmt::tapekit_health_op) + "\n" +
                 std::to_string(static_cast<int>(query)) + "\n",
             action);
  rmt::Reply r = link_.receive(action);
  // A server from before the question says so in its own words: the
  // drive may well have the answer, so this is no refusal of the drive's.
  if (!r.ok && r.errnum == EINVAL && r.text == rmt::unknown_health_query_text)
    throw scsi::ScsiError(r.errnum, scsi::Refusal::unknown_query, cdb.what,
                          "the server on " + host + " is an older tapekit rmt, which cannot ask it");
  if (!r.ok)
    throw scsi::ScsiError(r.errnum, scsi::refusal_for_errno(r.errnum), cdb.what, r.text);
  if (static_cast<std::uint64_t>(r.value) > rmt::max_health_data)
    link_.lose(action, "oversized drive health reply");
  std::vector<std::uint8_t> data(static_cast<std::size_t>(r.value));
  auto bytes = std::as_writable_bytes(std::span(data.data(), data.size()));
  if (link_.reply_in().read_exact(bytes) < data.size())
    link_.lose(action, "connection lost");
  return data;
}

std::int64_t RemoteTape::seek(std::int64_t offset, int whence) {
  pipeline_.settle("seek");
  // The servers that speak v1 (ours, rmt-dump, star) read the offset first;
  // of the others, GNU rmt, the one a Linux host has, reads the whence
  // first (docs/rmt-protocol.md, "L: seek"). Only BSD's own rmt is left out:
  // it has no v1 either.
  link_.probe_version();
  const bool v1 = link_.version() == RemoteLink::Version::v1;
  if (v1 && whence == SEEK_SET && (offset == 1 || offset == 2)) {
    // "L1\n0\n" and "L2\n0\n" read as whence-first to a server that infers
    // the order (tar never seeks to byte 1 or 2), so get there in two
    // steps whose reading is the same in both orders.
    link_.transact("L0\n0\n", "seek");
    return link_.transact("L" + std::to_string(offset) + "\n1\n", "seek");
  }
  std::string o = std::to_string(offset);
  std::string w = std::to_string(whence);
  request_ = v1 ? "L" + o + "\n" + w + "\n" : "L" + w + "\n" + o + "\n";
  return link_.transact(request_, "seek");
}

void RemoteTape::close() {
  if (!open_) return;
  if (link_.broken()) {
    // A stop cut a request or a reply short: nothing more can be asked,
    // and a server that stopped answering would not see its end of input
    // either, so its shells are ended at once. The writes still in flight
    // stay counted (unacknowledged()): whether they reached the tape is
    // not known.
    hang_up(true);
    std::string text = "close " + name() + ": the session was cut short by a stop";
    if (pipeline_.writes_in_flight() > 0)
      text += "; at least " + std::to_string(pipeline_.records_on_tape()) +
              " records are on the tape, up to " + std::to_string(pipeline_.writes_in_flight()) +
              " more may be";
    throw Error(EIO, text);
  }
  // Records the tape turns out not to have taken are reported once the
  // tape is closed (with its filemark), so the caller may go on elsewhere.
  std::exception_ptr unwritten = std::exchange(settle_failure_, nullptr);  // or any other failure to settle
  try {
    if (!unwritten) pipeline_.settle("close");
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
  if (!open_ || link_.broken() || settle_failure_) return false;
  try {
    pipeline_.settle("close");
    return true;
  } catch (...) {
    settle_failure_ = std::current_exception();  // for close() to throw
  }
  return false;
}

void RemoteTape::lose_connection(const std::string& action, const std::string& why,
                                 std::size_t stream) {
  if (link_.count() > 1) lose_stream(static_cast<int>(stream), action, why);
  link_.break_off();
  RemotePipeline::Unwritten unwritten = pipeline_.settle_writes_on_loss();
  int status = hang_up();
  // Most lost links are a remote shell that failed (unknown host, refused
  // key, no rmt there): say how it ended, since that is what to fix.
  // A shell that exited 0 explains nothing: the server simply went away.
  std::string how = status == -1 || status == 0
                        ? ""
                        : "; the " + link_.shell() + " ended with " + describe_wait_status(status);
  lost_reason_ = why + how;
  pipeline_.fail_on_connection_loss(action + " " + name() + ": " + why + how, unwritten,
                                    [this] { return read_back_size(); });
}

void RemoteTape::lose_stream(int stream, const std::string& action, const std::string& why) {
  link_.break_off();
  const std::size_t n = link_.count();
  const RemoteStreams::AfterLoss said = streams_.ask_after_loss(stream, pipeline_.reads_in_flight());
  if (stream < 0 && said.lost_by_server > 0) stream = static_cast<int>(said.lost_by_server - 1);
  int status = hang_up(false, stream < 0 ? 0 : static_cast<std::size_t>(stream));
  std::string how = stream < 0 || status == -1 || status == 0
                        ? ""
                        : "; the " + link_.shell() + " ended with " + describe_wait_status(status);
  std::string which_stream = stream < 0 ? "a stream of " + std::to_string(n)
                                        : "stream " + std::to_string(stream + 1) + " of " +
                                              std::to_string(n);
  pipeline_.fail_on_stream_loss(action + " " + name() + ": " + which_stream + " lost (" + why + how + ")",
                                said.written);
}

std::optional<std::uint64_t> RemoteTape::read_back_size() const noexcept {
  if ((flags_ & O_TRUNC) == 0 || (flags_ & O_ACCMODE) == O_RDONLY) return std::nullopt;
  try {
    // Not even opened again: a device (opening a tape drive may move or
    // load the tape), or a virtual tape, which has records, not a size.
    const std::string path = parse_remote_name(name()).path;
    if (path.starts_with("/dev/") || (path.ends_with(".tap") && !options_.plain_remote))
      return std::nullopt;
    OpenOptions how = options_;
    how.streams = 1;
    how.warn = nullptr;
    RemoteTape file(name(), O_RDONLY, how);
    // A tape, or a virtual tape, answers its status; lseek there says
    // nothing about what was written. A plain file has no status.
    try {
      file.status();
      return std::nullopt;
    } catch (const Error& e) {
      if (e.errnum() != ENOTTY) return std::nullopt;
    }
    std::int64_t end = file.seek(0, SEEK_END);
    file.close();
    if (end < 0) return std::nullopt;
    return static_cast<std::uint64_t>(end);
  } catch (const std::exception&) {
    return std::nullopt;  // the host, its shell or its rmt cannot be asked
  }
}

}  // namespace tk
