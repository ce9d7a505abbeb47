// The rmt request loop over a Tape: one request, one reply, errors answered
// as E replies so the client carries on (rmt-protocol.md §4, §12.6, §13).
#include "server.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <chrono>
#include <ctime>
#include <fcntl.h>
#include <memory>
#include <netdb.h>
#include <optional>
#include <paths.h>
#include <poll.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>
#include <utility>

#include "../../lib/io.hpp"
#include "../../lib/rmt/fd_source.hpp"
#include "../../lib/tape/tape.hpp"
#include "join.hpp"
#include "opener.hpp"
#include "policy.hpp"
#include "sandbox.hpp"

namespace tk::rmt_server {
namespace {

struct OpName {
  const char* name;
  MtOp op;
  bool by_default;  // on the allow-list of a restricted server (§12.6.8)
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

// Parallel streams: how long the first connection waits for the others to
// join, how long it answers the streams left after one was lost, and how
// long one request may take to arrive then.
constexpr int gather_seconds = 60;
constexpr int broken_seconds = 30;
constexpr int broken_request_ms = 5000;

// Ends the session: the control stream cannot be trusted any more.
struct SessionEnd {
  Exit status;
  std::string reason;
};

// A request refused before it reached the tape: errno plus reply text.
struct Refusal {
  int errnum;
  const char* text;
};

std::string describe_flags(int flags) {
  return rmt::format_open_flags(flags) + ((flags & O_NOFOLLOW) ? "|O_NOFOLLOW" : "");
}

// Who is on the other end, for the session log (§12.6.10).
std::string describe_peer(int fd) {
  if (const char* ssh = std::getenv("SSH_CONNECTION")) {
    std::string s = ssh;
    auto sp = s.find(' ');
    auto sp2 = sp == std::string::npos ? sp : s.find(' ', sp + 1);
    return "ssh:" + s.substr(0, sp) + (sp == std::string::npos ? "" : ":" + s.substr(sp + 1, sp2 - sp - 1));
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    char host[NI_MAXHOST], port[NI_MAXSERV];
    if (::getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof host, port,
                      sizeof port, NI_NUMERICHOST | NI_NUMERICSERV) == 0)
      return std::string(host) + ":" + port;
    return "socket";
  }
  return "pipe";
}

// A log the command line names. One that cannot be opened is a bad command
// line (exit 1): status 3 is for a failed connection.
Fd open_log(const char* option, const std::string& path) {
  try {
    return open_file(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0600);
  } catch (const Error& e) {
    throw UsageError(std::string(option) + " " + path + ": " + std::strerror(e.errnum()));
  }
}

std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return out + "\"";
}

// A request as the debug log shows it. A join's secret is left out: the log
// may be read by others than the session's user, and the secret is all a
// process of that user needs to join the session and take its data.
std::string describe_request(const rmt::Request& r) {
  std::string line(1, r.command);
  if (r.command == 's') line += r.sub;
  for (int i = 0; i < r.line_count; ++i) {
    std::string_view arg = r.lines[static_cast<std::size_t>(i)];
    std::string shown(arg.substr(0, 256));
    if (i == 1 && r.command == 'i' && rmt::parse_number(r.lines[0]) == rmt::tapekit_join_op) {
      // "<k>:<id>:<secret>": the index and the session id stay.
      auto first = arg.find(':');
      auto second = first == arg.npos ? arg.npos : arg.find(':', first + 1);
      shown = second == arg.npos ? "" : std::string(arg.substr(0, std::min<std::size_t>(second + 1, 256)));
      shown += "(secret not logged)";
    }
    line += " " + quoted(shown);
  }
  return line;
}

// Why syslog(3) would lose the session log, or "" when it works: glibc's
// syslog drops every line silently when nothing listens on /dev/log (a
// container without a log daemon). TAPEKIT_TEST_SYSLOG_SOCKET, for test
// suites only, names the socket checked instead; set and empty, none is
// checked, so that a suite's results do not depend on the host's daemon.
std::string syslog_problem() {
  std::string path = _PATH_LOG;
  if (const char* test = std::getenv("TAPEKIT_TEST_SYSLOG_SOCKET")) {
    if (*test == '\0') return {};
    path = test;
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return path + ": " + std::strerror(ENAMETOOLONG);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int err = 0;
  // As glibc's openlog: a datagram socket, else a stream one.
  for (int type : {SOCK_DGRAM, SOCK_STREAM}) {
    Fd sock(::socket(AF_UNIX, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!sock.valid()) return path + ": " + std::strerror(errno);
    if (retry_eintr(::connect, sock.get(), reinterpret_cast<const sockaddr*>(&addr),
                    socklen_t{sizeof addr}) == 0)
      return {};
    err = errno;
    // A stream socket whose backlog is full is there all the same.
    if (err == EAGAIN || err == EINPROGRESS) return {};
    if (err != EPROTOTYPE) break;
  }
  return path + ": " + std::strerror(err);
}

// A server started with one socket for all three (rshd without a second
// channel, inetd) must not write text where its replies go.
bool stderr_is_reply_channel() {
  struct stat err {}, out {};
  return ::fstat(2, &err) == 0 && ::fstat(1, &out) == 0 && err.st_dev == out.st_dev &&
         err.st_ino == out.st_ino && !S_ISCHR(err.st_mode);
}

class Session {
 public:
  Session(const ServerOptions& options, int in_fd, int out_fd)
      : options_(options),
        policy_(options.allow, options.read_only, options.write_once),
        source0_(in_fd, "control input"),
        in0_(source0_),
        in0_fd_(in_fd),
        out0_fd_(out_fd),
        source_(&source0_),
        in_(&in0_),
        out_fd_(out_fd),
        own_stdio_({in_fd, out_fd, 2}),
        peer_(describe_peer(in_fd)) {
    limits_.drain = std::max<std::size_t>(limits_.drain, 64 * 1024);
    source0_.set_busy_poll(options.busy_poll);
    source0_.set_stop_ends_wait(true);  // a signal ends the session between requests
    if (!options.debug_log.empty()) debug_ = open_log("--debug-log", options.debug_log);
    // Everything the session log needs is acquired now, before narrow().
    user_ = "uid " + std::to_string(::getuid());
    if (options.log != "none")  // the name service costs a start-up for nothing
      if (const passwd* pw = ::getpwuid(::getuid())) user_ = pw->pw_name;
    if (options.log == "syslog") {
      std::string problem = syslog_problem();
      if (problem.empty()) {
        ::openlog("rmt", LOG_PID | LOG_NDELAY, LOG_DAEMON);
      } else {
        // Said once, at the start. The log's lines are not repeated on
        // standard error, which the remote shell takes to the client's
        // terminal (tar's, every session): what the user must hear (a
        // refusal's reason, a hint) is told there anyway.
        syslog_missing_ = true;
        tell_user("syslog is unavailable (" + problem +
                  "); the session log is not kept (--log FILE keeps it)");
      }
    } else if (options.log != "none") {
      log_ = open_log("--log", options.log);
    }
  }

  // Under --allow, leaves the process nothing but the allowed trees.
  void narrow() {
    if (!policy_.restricted()) return;
    if (!options_.sandbox) {
      sandbox_ = "off";
      return;
    }
#if defined(__SANITIZE_ADDRESS__)
    // LeakSanitizer reads /proc/self/maps at exit.
    sandbox_ = "no landlock: sanitizer build";
#else
    sandbox_ = confine(policy_.sandbox_rules());
#endif
  }

  int run();

 private:
  void serve_requests();
  void handle(const rmt::Request& r);
  void open(const rmt::Request& r);
  void close_tape();
  void read(const rmt::Request& r);
  void write(const rmt::Request& r);
  void seek(const rmt::Request& r);
  void ioctl(const rmt::Request& r, bool extended);
  void status();
  void status_field(char sub);

  // Parallel streams (protocol.hpp, i29807 to i29810).
  std::size_t stream_count() const noexcept { return streams_.size() + 1; }
  // Makes source_, in_ and out_fd_ stream i's (0: the first connection).
  void select_stream(std::size_t i);
  int stream_input(std::size_t i) const;
  void start_streams(std::int64_t count);
  // Takes joins until all came, the client sent something on the first
  // stream (it went on without them) or the time is up.
  void gather();
  // The streams joined, in the order of their index, served in turn after
  // the first connection from the next request on.
  void install_streams(std::vector<JoinedStream> joined);
  // i29810: of the streams that joined when not all did, those the client
  // saw joined (`mask`, bit k for stream k) stay; the others are let go.
  void keep_streams(std::int64_t mask);
  // The other streams are let go: their rmt processes end.
  void end_streams();
  // The joiner's side: hands this connection to the session, then waits.
  void join(const rmt::Request& r);
  // After a stream of a joined session was lost: the tape is closed, what
  // the other streams still send is answered until they end.
  void serve_broken(std::string& end);
  void answer_broken(const rmt::Request& r);
  void log_line(const std::string& text);
  // A line for the session log and for the client's user, written once
  // where the log is standard error.
  void log_and_tell(const std::string& text);
  // After the session's first read found end of data: why the client
  // reads nothing there (tar: "does not look like a tar archive").
  void explain_first_read(Tape& t, const TapeStatus& before);

  Tape& tape();
  // Sees that the `done` bytes a W just wrote are in the image before the
  // reply acknowledges them (rmt.8, "Acknowledged writes"); returns how
  // many are, or throws when none is.
  std::size_t settle_write(std::size_t done);
  // The W record, read in place; ends the session if it does not arrive.
  std::span<const std::byte> receive_payload(std::size_t size);
  void drain_payload(std::uint64_t n);
  [[noreturn]] void premature_eof();
  void send(std::string_view bytes);
  void reply_ok(std::uint64_t value);
  void reply_error(int errnum, std::string_view text);
  void debug(std::string_view line);
  void log_session(const std::string& end);
  // Adds to the log's list of opens, which stays bounded however many O
  // requests a session makes.
  void note_open(const std::string& text, bool new_entry = true);
  // One line on standard error, which a remote shell takes to the client's
  // user (not when it is the reply channel itself).
  void tell_user(const std::string& text);
  void open_noted(const rmt::Request& r);  // open() after the name is noted
  std::byte* record_buffer(std::size_t size);

  const ServerOptions& options_;
  PathPolicy policy_;
  rmt::Limits limits_;
  // The first connection; with parallel streams, source_, in_ and out_fd_
  // are the stream whose turn it is.
  rmt::FdSource source0_;
  rmt::BufferedReader in0_;
  int in0_fd_;
  int out0_fd_;
  rmt::FdSource* source_;
  rmt::BufferedReader* in_;
  int out_fd_;
  OwnStdio own_stdio_;
  std::string peer_;
  Fd debug_;
  Fd log_;
  bool syslog_missing_ = false;  // --log syslog without a syslog to take it
  std::string user_;
  std::string sandbox_;

  std::unique_ptr<Tape> tape_;
  Fd tape_dir_;  // under --allow: the directory the tape was opened from
  int tape_flags_ = 0;
  bool holds_writes_ = false;  // OpenedTape::holds_writes: a virtual tape
  std::string device_;         // the tape's name as the client asked for it
  bool v1_ = false;
  // The client asked i29803 (tapekit's client does before opening a .tap):
  // it wants virtual tapes only, never a foreign .tap as a plain file.
  bool client_is_tapekit_ = false;
  bool first_read_done_ = false;  // this session's first R was answered
  // Pipelined rmt (protocol.hpp): agreed for this open, and whether a
  // failed W or an R that ended (0 or error) cancels what follows it until
  // the client acknowledges.
  bool pipelined_ = false;
  bool writes_stopped_ = false;
  bool reads_stopped_ = false;
  std::uint64_t cancelled_ = 0;
  rmt::Request request_;
  std::string reply_;
  // Room for a reply header in front of the record, so that an R reply
  // leaves in one write(2) without copying the data.
  static constexpr std::size_t header_room = 32;
  std::unique_ptr<std::byte[]> record_;
  std::size_t record_capacity_ = 0;

  std::string opened_;  // "path flags; path flags" for the log
  // Parallel streams: the meeting point while the others join, then
  // streams 1 .. N-1 (by index - 1), served in turn after the first.
  struct Stream {
    JoinedStream joined;
    std::unique_ptr<rmt::FdSource> source;
    std::unique_ptr<rmt::BufferedReader> in;
  };
  std::unique_ptr<JoinPoint> join_;
  std::vector<Stream> streams_;
  // Joined while others did not: kept by an i29810 that comes next on the
  // first connection, let go by any other request.
  std::vector<JoinedStream> unsettled_;
  std::size_t asked_streams_ = 0;
  std::size_t turn_ = 0;
  bool release_streams_ = false;  // after this request's reply (C, O)
  std::uint64_t records_written_ = 0;  // since the open
  std::size_t lost_stream_ = 0;        // from 1; 0: none
  std::string broken_text_;            // the E103 reply after a loss
  std::string streams_note_;           // for the log

  std::uint64_t bytes_in_ = 0;
  std::uint64_t bytes_out_ = 0;
  std::uint64_t requests_ = 0;
};

void Session::note_open(const std::string& text, bool new_entry) {
  constexpr std::size_t max_log = 4096;
  if (opened_.size() >= max_log) return;
  if (new_entry && !opened_.empty()) opened_ += "; ";
  opened_ += text;
  if (opened_.size() >= max_log) opened_ += " ...";
}

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

void Session::send(std::string_view bytes) {
  try {
    write_all(out_fd_, std::as_bytes(std::span(bytes.data(), bytes.size())), "control output");
  } catch (const Error& e) {
    throw SessionEnd{Exit::connection, e.what()};
  }
}

void Session::reply_ok(std::uint64_t value) {
  reply_.clear();
  rmt::append_ok(reply_, value);
  debug(reply_);
  send(reply_);
}

void Session::reply_error(int errnum, std::string_view text) {
  reply_.clear();
  rmt::append_error(reply_, errnum, text);
  debug(reply_);
  send(reply_);
}

void Session::debug(std::string_view line) {
  if (!debug_.valid()) return;
  std::string l(line);
  if (l.empty() || l.back() != '\n') l += '\n';
  try {
    write_all(debug_.get(), std::as_bytes(std::span(l.data(), l.size())), options_.debug_log);
  } catch (const Error&) {
    debug_ = Fd();  // a full disk must not stop the tape session
  }
}

std::span<const std::byte> Session::receive_payload(std::size_t size) {
  source_->set_timeout(options_.payload_timeout > 0 ? options_.payload_timeout * 1000 : -1);
  std::span<const std::byte> got;
  try {
    got = in_->take(size);
  } catch (const Error& e) {
    throw SessionEnd{Exit::connection, std::string("W payload: ") + e.what()};
  }
  if (got.size() < size) premature_eof();
  return got;
}

void Session::drain_payload(std::uint64_t n) {
  source_->set_timeout(options_.payload_timeout > 0 ? options_.payload_timeout * 1000 : -1);
  std::uint64_t got = 0;
  try {
    got = in_->discard(n);
  } catch (const Error& e) {
    throw SessionEnd{Exit::connection, std::string("W payload: ") + e.what()};
  }
  if (got < n) premature_eof();
}

void Session::premature_eof() {
  // Nothing of the record was written; say so before giving up, as GNU rmt
  // does, so the client reports a failed write rather than a lost server.
  reply_error(EIO, "Premature eof");
  throw SessionEnd{Exit::protocol, "end of input inside W payload"};
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

void Session::tell_user(const std::string& text) {
  if (!stderr_is_reply_channel()) std::fputs(("rmt: " + text + "\n").c_str(), stderr);
}

void Session::open_noted(const rmt::Request& r) {
  const std::string& device = r.lines[0];
  if (r.too_long[0]) throw Refusal{ENAMETOOLONG, "File name too long"};
  if (r.too_long[1]) throw Refusal{EINVAL, "Invalid open mode"};
  auto flags = rmt::parse_open_flags(r.lines[1]);
  if (!flags) throw Refusal{EINVAL, "Invalid open mode"};
  // As every server does, a second O closes the device opened before.
  close_tape();
  OpenDecision d = policy_.decide(device, *flags);
  note_open(" " + describe_flags(d.flags), false);
  OpenOptions oo;
  oo.create_mode = options_.create_mode;
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
  // A count above the cap is read short, which every client accepts (§12.6.5).
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
  if (extended && *wire == rmt::tapekit_streams_kept_op) return keep_streams(*count);
  if (extended && *wire == rmt::tapekit_session_op) {
    if (*count == 0) return reply_ok(records_written_);
    if (*count == 1) return reply_ok(lost_stream_);
    throw Refusal{EINVAL, "Invalid session question"};
  }
  if (extended && *wire == rmt::tapekit_position_op) {
    reply_ok(static_cast<std::uint64_t>(std::max<std::int64_t>(tape().tell(), 0)));
    return;
  }
  if (!extended && *wire == -1) {
    // The version probe: reply exactly A1, then speak v1 numbering (§9).
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
  if (*v < 0) throw Refusal{EIO, "Value unknown"};
  reply_ok(static_cast<std::uint64_t>(*v));
}

void Session::handle(const rmt::Request& r) {
  switch (r.command) {
    case 'O':
      release_streams_ = !streams_.empty();
      open(r);
      break;
    case 'C':
      release_streams_ = !streams_.empty();
      if (!tape_) throw Refusal{EBADF, "Bad file descriptor"};
      pipelined_ = writes_stopped_ = reads_stopped_ = false;
      close_tape();
      reply_ok(0);
      break;
    case 'R': read(r); break;
    case 'W': write(r); break;
    case 'L': seek(r); break;
    case 'I': ioctl(r, false); break;
    case 'i': ioctl(r, true); break;
    case 'S': status(); break;
    case 's': status_field(r.sub); break;
    case 'v': reply_ok(1); break;
    case 'V': reply_ok(2); break;
    default: throw Refusal{EINVAL, "Garbage command"};
  }
}

void Session::serve_requests() {
  for (;;) {
    // A signal that interrupted the last request ends the session here,
    // before the next read could block again.
    if (stop_requested()) throw SessionEnd{Exit::connection, "stopped by a signal"};
    if (!streams_.empty()) select_stream(turn_);
    source_->set_timeout(options_.idle_timeout > 0 ? options_.idle_timeout * 1000 : -1);
    try {
      if (!rmt::read_request(*in_, limits_, request_)) {
        // Our client ends a joined session with C first.
        if (!streams_.empty()) throw SessionEnd{Exit::connection, "end of input"};
        return;
      }
    } catch (const rmt::ProtocolError& e) {
      if (e.kind() == rmt::ProtocolError::Kind::garbage) reply_error(EINVAL, "Garbage command");
      throw SessionEnd{Exit::protocol, e.what()};
    } catch (const Interrupted&) {
      throw SessionEnd{Exit::connection, "stopped by a signal"};
    } catch (const Error& e) {
      throw SessionEnd{Exit::connection, e.what()};
    }
    ++requests_;
    if (debug_.valid()) debug(describe_request(request_));
    // Streams that joined while others did not stay only if the client
    // names them in its very next request.
    if (!unsettled_.empty() &&
        !(request_.command == 'i' &&
          rmt::parse_number(request_.lines[0]) == rmt::tapekit_streams_kept_op))
      unsettled_.clear();
    try {
      handle(request_);
    } catch (const Refusal& f) {
      reply_error(f.errnum, f.text);
    } catch (const Error& e) {
      reply_error(e.errnum(), std::strerror(e.errnum()));
    }
    if (release_streams_) {
      release_streams_ = false;
      end_streams();
    } else if (!streams_.empty()) {
      turn_ = (turn_ + 1) % stream_count();
    }
  }
}

int Session::run() {
  Exit status = Exit::ok;
  std::string end = "eof";
  try {
    serve_requests();
  } catch (const SessionEnd& e) {
    status = e.status;
    end = e.reason;
    if (!streams_.empty() && !stop_requested()) {
      // The stream whose turn it was ended (or its reply could not go): no
      // record can follow in order, so the tape gets its filemark now.
      status = Exit::connection;
      lost_stream_ = turn_ + 1;
      end = "stream " + std::to_string(lost_stream_) + " of " + std::to_string(stream_count()) +
            " lost after " + std::to_string(records_written_) + " records: " + e.reason;
      serve_broken(end);
    }
  }
  // Closing after a write writes the filemark; a failure here has no client
  // left to tell, so the log and the exit status carry it.
  try {
    close_tape();
  } catch (const Error& e) {
    end += std::string("; close: ") + e.what();
    if (status == Exit::ok) status = Exit::close;
  }
  streams_.clear();
  log_session(end);
  return static_cast<int>(status);
}

void Session::select_stream(std::size_t i) {
  if (i == 0) {
    source_ = &source0_;
    in_ = &in0_;
    out_fd_ = out0_fd_;
    return;
  }
  Stream& s = streams_[i - 1];
  source_ = s.source.get();
  in_ = s.in.get();
  out_fd_ = s.joined.out.get();
}

int Session::stream_input(std::size_t i) const {
  return i == 0 ? in0_fd_ : streams_[i - 1].joined.in.get();
}

void Session::start_streams(std::int64_t count) {
  if (!tape_ || !pipelined_) throw Refusal{EINVAL, "Streams need an open tape and a pipeline"};
  if (!streams_.empty() || count < 2 || count > rmt::max_streams)
    throw Refusal{EINVAL, "Invalid number of streams"};
  join_ = std::make_unique<JoinPoint>(static_cast<int>(count));
  reply_.clear();
  rmt::append_ok(reply_, join_->token().size());
  debug(reply_);
  reply_ += join_->token();
  send(reply_);
  gather();
}

void Session::gather() {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::seconds(gather_seconds);
  std::vector<JoinedStream> joined;
  std::string refusal;
  std::string why = "the client went on without them";
  while (!join_->complete() && !in0_.buffered()) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      why = "not all came within " + std::to_string(gather_seconds) + " s";
      break;
    }
    pollfd p[2] = {{join_->fd(), POLLIN, 0}, {in0_fd_, POLLIN, 0}};
    int n = retry_eintr(::poll, p, nfds_t{2}, static_cast<int>(left.count()));
    if (n == -1) {
      if (stop_requested()) throw SessionEnd{Exit::connection, "stopped by a signal"};
      throw_errno("poll");
    }
    if (p[1].revents != 0) break;
    if ((p[0].revents & POLLIN) != 0) {
      if (auto s = join_->accept_one(refusal))
        joined.push_back(std::move(*s));
      else if (!refusal.empty())
        log_line("join refused: " + refusal);
    }
  }
  const bool all = join_->complete();
  const std::size_t asked = join_->streams();
  const auto count = joined.size() + 1;
  join_.reset();  // the name goes with it: nobody else can try
  if (!all) {
    // The client says next which of them it saw join (i29810); any other
    // request lets them go.
    unsettled_ = std::move(joined);
    asked_streams_ = asked;
    streams_note_ = std::to_string(count) + " of " + std::to_string(asked) + " streams joined; " + why;
    return;
  }
  install_streams(std::move(joined));
  streams_note_ = std::to_string(count) + " streams";
}

void Session::install_streams(std::vector<JoinedStream> joined) {
  std::sort(joined.begin(), joined.end(),
            [](const JoinedStream& a, const JoinedStream& b) { return a.index < b.index; });
  streams_.resize(joined.size());
  for (std::size_t i = 0; i < joined.size(); ++i) {
    Stream& s = streams_[i];
    s.source = std::make_unique<rmt::FdSource>(joined[i].in.get(), "stream " + std::to_string(i + 2));
    s.source->set_busy_poll(options_.busy_poll);
    s.source->set_stop_ends_wait(true);
    s.in = std::make_unique<rmt::BufferedReader>(*s.source);
    s.joined = std::move(joined[i]);
  }
  // The request that installed them was the first connection's; the turns
  // begin after it, with the first connection again.
  turn_ = streams_.size();
}

void Session::keep_streams(std::int64_t mask) {
  std::vector<JoinedStream> waiting = std::exchange(unsettled_, {});
  if (!streams_.empty() || asked_streams_ == 0 || mask < 0 ||
      mask >= (std::int64_t{1} << asked_streams_) || (mask & 1) != 0)
    throw Refusal{EINVAL, "Invalid set of streams"};
  std::vector<JoinedStream> kept;
  for (JoinedStream& j : waiting)
    if ((mask >> j.index) & 1) kept.push_back(std::move(j));
  // What is not kept is let go with `waiting`.
  if (kept.size() != static_cast<std::size_t>(std::popcount(static_cast<std::uint64_t>(mask))))
    throw Refusal{EINVAL, "A stream named has not joined"};
  const std::size_t count = kept.size() + 1;
  install_streams(std::move(kept));
  streams_note_ = std::to_string(count) + " of " + std::to_string(asked_streams_) + " streams";
  asked_streams_ = 0;
  reply_ok(count);
}

void Session::end_streams() {
  if (streams_.empty()) return;
  select_stream(0);
  streams_.clear();
  turn_ = 0;
}

void Session::join(const rmt::Request& r) {
  if (requests_ != 1 || tape_ || r.too_long[1])
    throw Refusal{EINVAL, "Join only as the first request"};
  // The client sends nothing more until the join is answered.
  if (in0_.buffered()) throw Refusal{EINVAL, "Requests after a join request"};
  Handover h;
  try {
    h = hand_over(r.lines[1], in0_fd_, out0_fd_);
  } catch (const Error& e) {
    streams_note_ = std::string("join refused: ") + e.what();
    log_line(streams_note_);
    throw Refusal{EACCES, e.errnum() == EACCES ? "Join refused by the session"
                          : e.errnum() == EINVAL ? "Join refused: malformed token"
                                                 : "Join refused: no such session waiting"};
  }
  reply_ok(static_cast<std::uint64_t>(h.index));
  streams_note_ = "joined as stream " + std::to_string(h.index + 1);
  // The session reads and writes this connection now; sshd keeps it open
  // while we live, so we live until the session lets it go.
  wait_for_release(h.link.get());
  throw SessionEnd{Exit::ok, "released"};
}

void Session::serve_broken(std::string& end) {
  try {
    close_tape();
  } catch (const Error& e) {
    end += std::string("; close: ") + e.what();
  }
  broken_text_ = "Stream " + std::to_string(lost_stream_) + " of " +
                 std::to_string(stream_count()) + " lost after " +
                 std::to_string(records_written_) + " records";
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::seconds(broken_seconds);
  std::vector<bool> live(stream_count(), true);
  live[lost_stream_ - 1] = false;
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::size_t> which;
    std::optional<std::size_t> ready;
    for (std::size_t i = 0; i < live.size() && !ready; ++i) {
      if (!live[i]) continue;
      select_stream(i);
      if (in_->buffered()) ready = i;
      fds.push_back({stream_input(i), POLLIN, 0});
      which.push_back(i);
    }
    if (fds.empty()) return;
    if (!ready) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return;
      if (retry_eintr(::poll, fds.data(), static_cast<nfds_t>(fds.size()),
                      static_cast<int>(left.count())) <= 0)
        return;  // the time is up, or a stop signal
      for (std::size_t k = 0; k < fds.size() && !ready; ++k)
        if (fds[k].revents != 0) ready = which[k];
    }
    select_stream(*ready);
    source_->set_timeout(broken_request_ms);
    try {
      if (!rmt::read_request(*in_, limits_, request_))
        live[*ready] = false;
      else
        answer_broken(request_);
    } catch (const SessionEnd&) {
      live[*ready] = false;
    } catch (const Error&) {
      live[*ready] = false;
    }
  }
}

void Session::answer_broken(const rmt::Request& r) {
  ++requests_;
  if (r.command == 'W') {
    auto count = rmt::parse_number(r.lines[0]);
    if (r.too_long[0] || !count || *count < 0) throw SessionEnd{Exit::protocol, "invalid W count"};
    drain_payload(static_cast<std::uint64_t>(*count));
  } else if (r.command == 'C') {
    return reply_ok(0);
  } else if (r.command == 'i') {
    auto wire = rmt::parse_number(r.lines[0]);
    auto count = rmt::parse_number(r.lines[1]);
    if (wire && count && *wire == rmt::tapekit_session_op && (*count == 0 || *count == 1))
      return reply_ok(*count == 0 ? records_written_ : lost_stream_);
  }
  reply_error(ECONNABORTED, broken_text_);
}

void Session::log_session(const std::string& end) {
  if (options_.log == "none") return;
  std::string line = "session peer=" + peer_ + " user=" + user_;
  if (const char* cmd = std::getenv("SSH_ORIGINAL_COMMAND")) line += " command=" + quoted(cmd);
  if (!options_.login_command.empty()) line += " login-command=" + quoted(options_.login_command);
  line += " open=[" + opened_ + "] requests=" + std::to_string(requests_) +
          " in=" + std::to_string(bytes_in_) + " out=" + std::to_string(bytes_out_) +
          " end=" + quoted(end);
  if (!streams_note_.empty()) line += " streams=" + quoted(streams_note_);
  if (!sandbox_.empty()) line += " sandbox=" + quoted(sandbox_);
  log_line(line);
  if (options_.log == "syslog") ::closelog();
}

void Session::log_and_tell(const std::string& text) {
  log_line(text);
  tell_user(text);
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

void Session::log_line(const std::string& text) {
  if (options_.log == "none" || syslog_missing_) return;
  if (options_.log == "syslog") {
    ::syslog(LOG_INFO, "%s", text.c_str());
    return;
  }
  char stamp[32];
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
  std::string line = std::string(stamp) + " rmt[" + std::to_string(::getpid()) + "]: " + text + "\n";
  try {
    write_all(log_.get(), std::as_bytes(std::span(line.data(), line.size())), options_.log);
  } catch (const Error&) {
    // Losing a log line must not change the session.
  }
}

}  // namespace

int op_from_name(const std::string& name) {
  for (const auto& o : op_names)
    if (name == o.name) return static_cast<int>(o.op);
  return -1;
}

int serve(const ServerOptions& options, int in_fd, int out_fd) {
  Session session(options, in_fd, out_fd);
  session.narrow();
  return session.run();
}

}  // namespace tk::rmt_server
