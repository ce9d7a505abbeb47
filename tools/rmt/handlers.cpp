// Each rmt request's handler: O (the policy's decision and the open), the
// tape's close, R, W, L, I and i (the mt operations and tapekit's
// extensions), S and s. The loop that dispatches to them, and answers C, v
// and V itself, is in server.cpp; the parallel streams' requests (i29807 to
// i29810) are answered here and carried out by the session's StreamSet
// (stream_set.cpp).
#include "session.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <unistd.h>
#include <utility>

#include "../../lib/io.hpp"
#include "../../lib/scsi/sg_io.hpp"
#include "../../lib/tape/tape.hpp"
#include "opener.hpp"
#include "policy.hpp"

namespace tk::rmt_server {
namespace {

struct OpName {
  const char* name;
  MtOp op;
  // On the allow-list of a restricted server (docs/rmt-protocol.md,
  // "The server's rules").
  bool by_default;
  // Refused by --read-only: it writes, or it changes what the drive does
  // for every later client (ejects, locks the door, sets compression, block
  // size, density or driver options, resets). Positioning stays allowed: a
  // shared drive's readers position it.
  bool read_only_refuses;
};

constexpr std::array<OpName, 33> op_names{{
    {"reset", MtOp::reset, false, true},       {"fsf", MtOp::fsf, true, false},
    {"bsf", MtOp::bsf, true, false},           {"fsr", MtOp::fsr, true, false},
    {"bsr", MtOp::bsr, true, false},           {"weof", MtOp::weof, true, true},
    {"rewind", MtOp::rewind, true, false},     {"offline", MtOp::offline, true, true},
    {"nop", MtOp::nop, true, false},           {"retension", MtOp::retension, true, false},
    {"bsfm", MtOp::bsfm, true, false},         {"fsfm", MtOp::fsfm, true, false},
    {"eom", MtOp::eom, true, false},           {"erase", MtOp::erase, false, true},
    {"ras1", MtOp::ras1, false, false},        {"ras2", MtOp::ras2, false, false},
    {"ras3", MtOp::ras3, false, false},        {"setblk", MtOp::setblk, false, true},
    {"setdensity", MtOp::setdensity, false, true},
    {"seek", MtOp::seek, true, false},         {"tell", MtOp::tell, true, false},
    {"setdrvbuffer", MtOp::setdrvbuffer, false, true},
    {"fss", MtOp::fss, true, false},           {"bss", MtOp::bss, true, false},
    {"wsm", MtOp::wsm, false, true},           {"lock", MtOp::lock, false, true},
    {"unlock", MtOp::unlock, false, true},     {"load", MtOp::load, true, false},
    {"unload", MtOp::unload, true, true},      {"compression", MtOp::compression, true, true},
    {"setpart", MtOp::setpart, false, false},  {"mkpart", MtOp::mkpart, false, true},
    {"weofi", MtOp::weofi, true, true},
}};

const OpName* find_op(std::int64_t linux_op) {
  auto it = std::find_if(op_names.begin(), op_names.end(), [linux_op](const OpName& o) {
    return static_cast<std::int64_t>(o.op) == linux_op;
  });
  return it == op_names.end() ? nullptr : &*it;
}

volatile std::sig_atomic_t open_timed_out = 0;

extern "C" void on_open_alarm(int) {
  open_timed_out = 1;
  request_stop();
}

// Bounds an open by --idle-timeout: a FIFO renamed in after the checks, or
// a device that never answers, would otherwise hold the session for good.
// SIGALRM interrupts the open, and the stop it requests makes lib/io give
// up instead of retrying.
class OpenDeadline {
 public:
  explicit OpenDeadline(int seconds) : armed_(seconds > 0) {
    if (!armed_) return;
    struct sigaction sa {};
    sa.sa_handler = on_open_alarm;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: the open must return
    ::sigaction(SIGALRM, &sa, &old_);
    ::alarm(static_cast<unsigned>(seconds));
  }
  ~OpenDeadline() {
    if (!armed_) return;
    ::alarm(0);
    ::sigaction(SIGALRM, &old_, nullptr);
  }
  OpenDeadline(const OpenDeadline&) = delete;
  OpenDeadline& operator=(const OpenDeadline&) = delete;

 private:
  bool armed_;
  struct sigaction old_ {};
};

std::string describe_flags(int flags) {
  return rmt::format_open_flags(flags) + ((flags & O_NOFOLLOW) ? "|O_NOFOLLOW" : "");
}

}  // namespace

std::byte* Session::record_buffer(std::size_t size) {
  if (size > record_capacity_ || !record_) {
    std::size_t capacity = std::max(size, std::min<std::size_t>(64 * 1024, options_.max_record));
    record_.reset(new std::byte[capacity + header_room]);
    record_capacity_ = capacity;
  }
  return record_.get() + header_room;
}

Tape& Session::tape() {
  if (!tape_) throw Error(EBADF, "no device open");
  return *tape_;
}

void Session::open(const rmt::Request& r) {
  const std::string& device = r.lines[0];
  note_open(quoted(device.substr(0, 256)));
  // The log shows a refused or failed open as such, not as one that was served.
  try {
    open_noted(r);
  } catch (const Refusal& f) {
    note_open(std::string(" refused: ") + std::strerror(f.errnum), false);
    tell_user(device.substr(0, 256) + ": refused: " + f.text);
    throw;
  } catch (const Interrupted&) {
    throw;
  } catch (const Error& e) {
    note_open(std::string(" failed: ") + std::strerror(e.errnum()), false);
    // The client shows its user only strerror: the reason (the policy that
    // refused, what the file begins with) reaches them here, when there is
    // more to it than that.
    if (e.context() != "open " + device) tell_user(e.what());
    throw;
  }
}

void Session::open_noted(const rmt::Request& r) {
  const std::string& device = r.lines[0];
  // As every server does, a second O closes the device opened before, even
  // one it then refuses (rmt-tar; rmt.8 says so).
  close_tape();
  if (r.too_long[0]) throw Refusal{ENAMETOOLONG, "File name too long"};
  if (r.too_long[1]) throw Refusal{EINVAL, "Invalid open mode"};
  auto flags = rmt::parse_open_flags(r.lines[1]);
  if (!flags) throw Refusal{EINVAL, "Invalid open mode"};
  OpenDecision d = policy_.decide(device, *flags);
  note_open(" " + describe_flags(d.flags), false);
  OpenOptions oo;
  oo.create_mode = options_.create_mode;
  oo.single_link_writes = !d.root.empty() && !options_.allow_hard_links;
  oo.virtual_tapes = options_.virtual_tapes;
  // What the drive found on loading a virtual tape (a write session left
  // unfinished, completed or left for a writer; an image changed behind its
  // back): the session log keeps it, and the client's user sees it on the
  // remote shell's standard error, which is all a host without a log shows.
  oo.warn = [this](const std::string& text) { log_and_tell(text); };
  // A client that is not tapekit's asking to read a *.tap that is no image
  // (a tar archive another rmt wrote under that name) reads it as rmt-tar
  // would serve it; tapekit's client wants the virtual tape or an error.
  if (!client_is_tapekit_ && (d.flags & O_ACCMODE) == O_RDONLY)
    oo.foreign_as_file = [this](const std::string& text) {
      note_open(" as a plain file (no SIMH image)", false);
      log_and_tell(text);
    };
  OpenedTape opened;
  try {
    OpenDeadline deadline(options_.idle_timeout);
    opened = open_decided(d, oo, own_stdio_);
  } catch (const Interrupted&) {
    if (open_timed_out) throw SessionEnd{Exit::connection, "open timed out"};
    throw;
  }
  tape_ = std::move(opened.tape);
  tape_dir_ = std::move(opened.directory);
  tape_flags_ = d.flags;
  holds_writes_ = opened.holds_writes;
  device_ = device.substr(0, 256);
  records_written_ = 0;
  v1_ = false;
  pipelined_ = writes_stopped_ = reads_stopped_ = false;
  reply_ok(0);
}

void Session::close_tape() {
  if (!tape_) return;
  auto t = std::move(tape_);
  Fd dir = std::move(tape_dir_);  // outlives the tape's closing writes
  t->close();
}

void Session::read(const rmt::Request& r) {
  auto count = rmt::parse_number(r.lines[0]);
  if (r.too_long[0] || !count || *count < 0) throw Refusal{EINVAL, "Invalid byte count"};
  if (reads_stopped_) {
    ++cancelled_;
    throw Refusal{ECANCELED, "Read cancelled after the end of a read-ahead"};
  }
  Tape& t = tape();
  // A count above the cap is read short, which every client accepts
  // (docs/rmt-protocol.md, "R: read").
  auto want = static_cast<std::size_t>(
      std::min<std::uint64_t>(static_cast<std::uint64_t>(*count), options_.max_record));
  std::byte* data = record_buffer(want);
  // Where a virtual tape stood before the session's first read, in case
  // that read finds end of data. Asked of a read-only open only: status
  // flushes what a writer staged, and a failure there is the write's to
  // report.
  std::optional<TapeStatus> before;
  if (!std::exchange(first_read_done_, true) && holds_writes_ &&
      (tape_flags_ & O_ACCMODE) == O_RDONLY) {
    try {
      before = t.status();
    } catch (const Error&) {
      // No position, no explanation: the read itself goes ahead.
    }
  }
  std::size_t n = 0;
  try {
    n = t.read(std::span(data, want));
  } catch (const Error&) {
    reads_stopped_ = pipelined_;
    if (before) explain_first_read(t, *before);
    throw;
  }
  if (n == 0) {
    reads_stopped_ = pipelined_;
    if (before) explain_first_read(t, *before);
  }
  bytes_out_ += n;
  char header[header_room];
  auto [end, ec] = std::to_chars(header + 1, header + sizeof header - 1, n);
  header[0] = 'A';
  *end++ = '\n';
  auto hlen = static_cast<std::size_t>(end - header);
  std::byte* start = data - hlen;
  std::memcpy(start, header, hlen);
  debug(std::string_view(header, hlen));
  send(std::string_view(reinterpret_cast<const char*>(start), hlen + n));
}

void Session::explain_first_read(Tape& t, const TapeStatus& before) {
  TapeStatus now;
  try {
    now = t.status();
  } catch (const Error&) {
    return;
  }
  // A blank tape has nothing to rewind to.
  if (!now.eod || before.bot) return;
  // st leaves the block number unknown once a read has met end of data.
  std::string where = before.file_number < 0 ? "position unknown"
                                             : "file " + std::to_string(before.file_number);
  if (before.file_number >= 0 && before.block_number >= 0)
    where += ", block " + std::to_string(before.block_number);
  log_and_tell(device_ + ": first read is at end of data (" + where +
               "): rewind first, e.g. mt -f host:" + device_ + " rewind");
}

void Session::write(const rmt::Request& r) {
  auto count = rmt::parse_number(r.lines[0]);
  if (r.too_long[0] || !count || *count < 0) {
    // Without a count the payload cannot be found: answer, then give up.
    reply_error(EINVAL, "Invalid byte count");
    throw SessionEnd{Exit::protocol, "invalid W count"};
  }
  auto n = static_cast<std::uint64_t>(*count);
  if (n > options_.max_record) {
    drain_payload(n);
    writes_stopped_ = writes_stopped_ || pipelined_;
    throw Refusal{EINVAL, "Record larger than the server's limit"};
  }
  auto size = static_cast<std::size_t>(n);
  std::span<const std::byte> record = receive_payload(size);
  if (writes_stopped_) {
    ++cancelled_;
    throw Refusal{ECANCELED, "Write cancelled after a failed write"};
  }
  // From here a failure stops the writes that follow it (pipelined rmt).
  writes_stopped_ = pipelined_;
  if (!tape_) throw Refusal{EBADF, "Bad file descriptor"};
  if ((tape_flags_ & O_ACCMODE) == O_RDONLY) throw Refusal{EBADF, "Bad file descriptor"};
  if (n > 0) {
    std::size_t done = size;
    try {
      tape_->write(record);
    } catch (const Error& e) {
      // Part of the record reached the medium (fixed blocks at early
      // warning, a file filling up): answer that count, as write(2) and
      // GNU rmt do. An E reply would make the client send it all again.
      if (e.bytes_done() == 0 || e.errnum() == EINTR) throw;
      done = e.bytes_done();
    }
    done = settle_write(done);
    if (done < size) {
      bytes_in_ += done;
      ++records_written_;
      reply_ok(done);
      return;
    }
  }
  writes_stopped_ = false;
  bytes_in_ += n;
  if (n > 0) ++records_written_;
  reply_ok(n);
}

std::size_t Session::settle_write(std::size_t done) {
  if (!holds_writes_) return done;
  try {
    // st's MTIOCPOS flushes the driver's buffer before it answers, and a
    // virtual tape's tell does the same with its own.
    tape_->tell();
  } catch (const LostWrites& e) {
    // Only this request's bytes can have been held: every W before it was
    // settled. What did not reach the image is not acknowledged.
    if (e.bytes_lost() >= done) throw Error(e.cause(), "write " + tape_->name());
    return done - static_cast<std::size_t>(e.bytes_lost());
  }
  return done;
}

void Session::seek(const rmt::Request& r) {
  auto args = rmt::decode_seek(r.lines[0], r.lines[1], options_.seek_order);
  if (r.too_long[0] || r.too_long[1] || !args) throw Refusal{EINVAL, "Invalid seek argument"};
  Tape& t = tape();
  std::int64_t result = 0;
  switch (args->whence) {
    case 0:
    case 1:
    case 2: result = t.seek(args->offset, args->whence); break;
    case 3: result = t.seek(args->offset, SEEK_DATA); break;
    case 4: result = t.seek(args->offset, SEEK_HOLE); break;
    case 10:
      // dump's QFA "where am I"; a file that is no tape answers its offset.
      try {
        result = t.tell();
      } catch (const Error& e) {
        if (e.errnum() != ENOTTY) throw;
        result = t.seek(0, SEEK_CUR);
      }
      break;
    case 11:
      try {
        if (args->offset < 0 || args->offset > INT32_MAX) throw Refusal{EINVAL, "Invalid argument"};
        t.op(MtOp::seek, static_cast<int>(args->offset));
        result = args->offset;
      } catch (const Error& e) {
        if (e.errnum() != ENOTTY) throw;
        result = t.seek(args->offset, SEEK_SET);
      }
      break;
    default: throw Refusal{EINVAL, "Invalid seek direction"};
  }
  reply_ok(static_cast<std::uint64_t>(std::max<std::int64_t>(result, 0)));
}

void Session::ioctl(const rmt::Request& r, bool extended) {
  auto wire = rmt::parse_number(r.lines[0]);
  auto count = rmt::parse_number(r.lines[1]);
  if (r.too_long[0] || !wire) throw Refusal{EINVAL, "Invalid operation code"};
  if (extended && *wire == rmt::tapekit_join_op) return join(r);
  if (r.too_long[1] || !count) throw Refusal{EINVAL, "Invalid byte count"};
  if (extended && *wire == rmt::tapekit_identify_op) {
    client_is_tapekit_ = true;
    reply_ok(static_cast<std::uint64_t>(rmt::tapekit_identify_op));
    return;
  }
  if (extended && *wire == rmt::tapekit_pipeline_op) {
    if (*count < 1) throw Refusal{EINVAL, "Invalid pipeline version"};
    pipelined_ = true;
    writes_stopped_ = reads_stopped_ = false;
    reply_ok(static_cast<std::uint64_t>(std::min(*count, rmt::pipeline_version)));
    return;
  }
  if (extended && *wire == rmt::tapekit_acknowledge_op) {
    writes_stopped_ = reads_stopped_ = false;
    reply_ok(std::exchange(cancelled_, 0));
    return;
  }
  if (extended && *wire == rmt::tapekit_streams_op) return start_streams(*count);
  if (extended && *wire == rmt::tapekit_streams_kept_op) return reply_ok(streams_.keep(*count));
  if (extended && *wire == rmt::tapekit_session_op) {
    if (*count == 0) return reply_ok(records_written_);
    if (*count == 1) return reply_ok(streams_.lost());
    throw Refusal{EINVAL, "Invalid session question"};
  }
  if (extended && *wire == rmt::tapekit_health_op) return health(*count);
  if (extended && *wire == rmt::tapekit_position_op) {
    reply_ok(static_cast<std::uint64_t>(std::max<std::int64_t>(tape().tell(), 0)));
    return;
  }
  if (!extended && *wire == -1) {
    // The version probe: reply exactly A1, then speak v1 numbering
    // (docs/rmt-protocol.md, "I: tape operation").
    v1_ = true;
    reply_ok(1);
    return;
  }
  std::optional<int> op;
  if (extended)
    op = rmt::linux_op_from_extended(*wire);
  else if (v1_ && *wire <= 10)
    op = rmt::linux_op_from_v1(*wire);
  else if (*wire >= 0 && *wire <= INT32_MAX)
    op = static_cast<int>(*wire);  // raw Linux numbers (v0; v1 above 10)
  const OpName* name = op ? find_op(*op) : nullptr;
  if (!name) throw Refusal{EINVAL, "Invalid operation code"};
  if (*count < INT32_MIN || *count > INT32_MAX) throw Refusal{EINVAL, "Invalid byte count"};
  bool allowed = !policy_.restricted() || options_.all_ioctls || name->by_default ||
                 std::find(options_.extra_ioctls.begin(), options_.extra_ioctls.end(), *op) !=
                     options_.extra_ioctls.end();
  if (!allowed) throw Refusal{EPERM, "Operation not permitted by the server"};
  if (name->read_only_refuses && options_.read_only) throw Refusal{EROFS, "Read-only server"};
  tape().op(name->op, static_cast<int>(*count));
  reply_ok(static_cast<std::uint64_t>(std::max<std::int64_t>(*count, 0)));
}

void Session::start_streams(std::int64_t count) {
  if (!tape_ || !pipelined_) throw Refusal{EINVAL, "Streams need an open tape and a pipeline"};
  const std::string& token = streams_.listen(count);
  reply_.clear();
  rmt::append_ok(reply_, token.size());
  debug(reply_);
  reply_ += token;
  send(reply_);
  streams_.gather();
}

void Session::join(const rmt::Request& r) {
  if (requests_ != 1 || tape_ || r.too_long[1])
    throw Refusal{EINVAL, "Join only as the first request"};
  Handover h = streams_.hand_over(r.lines[1]);
  reply_ok(static_cast<std::uint64_t>(h.index));
  streams_.wait_until_released(h);
  throw SessionEnd{Exit::ok, "released"};
}

void Session::health(std::int64_t query) {
  // The number picks one command of a fixed list, built by lib/scsi: a
  // client never sends a CDB. Every one reads; none changes the drive.
  if (query < 0 || query >= scsi::health_query_count)
    throw Refusal{EINVAL, rmt::unknown_health_query_text.data()};
  std::vector<std::uint8_t> data;
  try {
    data = tape().health_data(static_cast<scsi::HealthQuery>(query));
  } catch (const scsi::ScsiError& e) {
    // The client knows the command it asked; the reason is the drive's.
    return reply_error(e.errnum(), e.reason());
  }
  if (data.size() > rmt::max_health_data) data.resize(rmt::max_health_data);
  reply_.clear();
  rmt::append_ok(reply_, data.size());
  debug(reply_);
  reply_.append(reinterpret_cast<const char*>(data.data()), data.size());
  send(reply_);
}

void Session::status() {
  auto m = encode_mtget(mtget_from_status(tape().status()));
  reply_.clear();
  rmt::append_ok(reply_, m.size());
  debug(reply_);
  reply_.append(reinterpret_cast<const char*>(m.data()), m.size());
  send(reply_);
}

void Session::status_field(char sub) {
  if (sub == rmt::tapekit_compression_field) {
    TapeStatus s = tape().status();
    if (!s.compression_known) throw Refusal{EIO, "Value unknown"};
    return reply_ok(s.compression ? 1 : 0);
  }
  auto v = mtget_field(mtget_from_status(tape().status()), sub);
  if (!v) throw Refusal{EINVAL, "Invalid status field"};
  // A file or block number the drive lost (after bsf, eom or a seek) is -1,
  // as st has it in struct mtget and rmt-dump answers it: A-1.
  reply_ok_signed(*v);
}

int op_from_name(const std::string& name) {
  for (const auto& o : op_names)
    if (name == o.name) return static_cast<int>(o.op);
  return -1;
}

}  // namespace tk::rmt_server
