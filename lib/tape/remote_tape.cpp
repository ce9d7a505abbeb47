// The rmt client: a Tape whose every call is one request on the control link.
#include "remote_tape.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace tk {
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
// environment (CVE-2022-37704, rmt-protocol.md §12.7.9).
std::string pick(const std::string& option, const char* env, const char* fallback) {
  if (!option.empty()) return option;
  if (const char* v = ::secure_getenv(env); v != nullptr && *v != '\0') return v;
  return fallback;
}

// Writing to a remote shell that died must be an EPIPE error, not a SIGPIPE
// that kills the program: SIGPIPE is blocked for the write and a pending one
// is consumed before it is unblocked (the library must not change the
// program's signal dispositions).
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigset_t pipe_only;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_only, &old_);
  }
  ~SigpipeGuard() {
    if (!was_pending_) {
      sigset_t pipe_only;
      sigemptyset(&pipe_only);
      sigaddset(&pipe_only, SIGPIPE);
      timespec zero{0, 0};
      while (sigtimedwait(&pipe_only, nullptr, &zero) > 0) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t old_{};
  bool was_pending_ = false;
};

// Pipelined rmt: the window starts small and doubles while the link could
// carry more (see write_pipelined), up to the memory a client may hold in
// records not yet known to be on the tape.
constexpr std::size_t initial_write_window = std::size_t{2} << 20;
constexpr std::size_t max_window = std::size_t{64} << 20;
constexpr std::size_t initial_read_window = 4;

// How long a stream still up gets to answer how many records the tape holds
// after another was lost.
constexpr int question_timeout_ms = 10000;

// How long status() waits for the S reply of a server that did not answer
// as GNU rmt does before sending the newline a server that reads lines
// waits for.
constexpr int s_reply_wait_ms = 2000;

// The option wins; the environment is read with secure_getenv like RSH, and
// a value that is not a number of seconds is an error, not a silent default.
int connect_timeout_seconds(const OpenOptions& options) {
  if (options.connect_timeout >= 0) return std::min(options.connect_timeout, max_connect_timeout);
  const char* v = ::secure_getenv("TAPEKIT_CONNECT_TIMEOUT");
  if (v == nullptr || *v == '\0') return default_connect_timeout;
  std::string_view text(v);
  int seconds = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec != std::errc() || end != text.data() + text.size() || seconds < 0 ||
      seconds > max_connect_timeout)
    throw Error(EINVAL, "TAPEKIT_CONNECT_TIMEOUT='" + std::string(text) +
                            "': not a number of seconds from 0 to " +
                            std::to_string(max_connect_timeout));
  return seconds;
}

// How long a task has waited, runnable, for a CPU (the second field of
// /proc/PID/schedstat, in ns; 0 when the kernel does not say).
std::chrono::nanoseconds run_queue_wait(const std::string& task) {
  Fd fd(::open(("/proc/" + task + "/schedstat").c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return {};
  char text[128];
  ssize_t n = ::read(fd.get(), text, sizeof text - 1);
  if (n <= 0) return {};
  text[n] = '\0';
  unsigned long long on_cpu = 0, waited = 0;
  if (std::sscanf(text, "%llu %llu", &on_cpu, &waited) != 2) return {};
  return std::chrono::nanoseconds(static_cast<std::int64_t>(waited));
}

// An mtget register (mt_dsreg, mt_gstat, mt_erreg) sent as a number: a
// server whose long has 32 bits sends one with its top bit set as negative.
std::int64_t register_bits(std::int64_t value) {
  if (value < 0 && value >= INT32_MIN)
    return static_cast<std::int64_t>(static_cast<std::uint32_t>(value));
  return value;
}

bool shell_safe(const std::string& s) {
  return !s.empty() && s.front() != '-' &&
         std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '-' || c == '_' || c == '[' || c == ']' || c == '%';
         });
}

}  // namespace

int auto_streams(std::chrono::nanoseconds round_trip, std::uint64_t rate) {
  double seconds = std::chrono::duration<double>(round_trip).count();
  double bytes = static_cast<double>(rate > 0 ? rate : auto_stream_rate) * seconds;
  double wanted = std::ceil(bytes / static_cast<double>(ssh_channel_window));
  return static_cast<int>(std::clamp(wanted, 1.0, static_cast<double>(max_auto_streams)));
}

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
  connect_timeout_ = connect_timeout_seconds(options);
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
  // "Connected" means the open was answered: a remote shell that never
  // starts the server (a host that is down, a stuck login) must not hang us.
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
  connecting_ = false;
  streams_[0].source->set_timeout(-1);
  open_ = true;
}

RemoteTape::Stream RemoteTape::open_stream(bool hold_stderr) {
  Stream s;
  if (hold_stderr)
    s.held_stderr = above_stdio(Fd(::memfd_create("remote shell stderr", MFD_CLOEXEC)));
  s.link = spawn_piped(argv_, s.held_stderr.get());
  // A W request with a large record then leaves in one write(2).
  grow_pipe(s.link.to_child.get(), std::size_t{1} << 20);
  grow_pipe(s.link.from_child.get(), std::size_t{1} << 20);
  s.source = std::make_unique<rmt::FdSource>(s.link.from_child.get(), "rmt link to " + host_);
  s.source->set_busy_poll(rmt::default_busy_poll());
  s.in = std::make_unique<rmt::BufferedReader>(*s.source, 16 * 1024);
  return s;
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

int RemoteTape::hang_up(bool at_once, std::size_t which) noexcept {
  open_ = false;
  end_joiners(joiners_);
  // Every link is closed before any shell is waited for, so that they all
  // see the end of their input at once.
  for (Stream& s : streams_) {
    s.link.to_child = Fd();
    s.link.from_child = Fd();
  }
  int status = -1;
  for (std::size_t i = 0; i < streams_.size(); ++i) {
    Child& process = streams_[i].link.process;
    if (process.pid() <= 0) continue;
    try {
      // The remote shell ends once rmt sees end of input; one that does not
      // (a stuck network) must not hang the client forever.
      int s = at_once ? process.terminate() : process.wait_or_terminate(30);
      if (i == which) status = s;
    } catch (const Error&) {
    }
    show_held_stderr(streams_[i]);
  }
  return status;
}

void RemoteTape::lose_connection(const std::string& action, const std::string& why,
                                 std::size_t stream) {
  if (streams_.size() > 1) lose_stream(static_cast<int>(stream), action, why);
  broken_ = true;
  UnwrittenRecords::Records unwritten = settle_writes_on_loss();
  int status = hang_up();
  // Most lost links are a remote shell that failed (unknown host, refused
  // key, no rmt there): say how it ended, since that is what to fix.
  // A shell that exited 0 explains nothing: the server simply went away.
  std::string how = status == -1 || status == 0
                        ? ""
                        : "; the " + shell_ + " ended with " + describe_wait_status(status);
  std::string text = action + " " + name() + ": " + why + how;
  if (unwritten.empty()) throw Error(EIO, text);
  text += "; " + std::to_string(records_on_tape_) +
          (records_on_tape_ == 1 ? " record is" : " records are") + " on the tape";
  throw UnwrittenRecords(EIO, text, std::move(unwritten));
}

// Pipelined writes were counted as written when sent (write_pipelined).
// What was sent whole still reaches the server, which answers each request
// before it sees the end of its input: once the link to it is closed, the
// answers that come say exactly which of those records are on the tape.
// A server that does not answer within 30 s, or is gone, leaves the rest
// unanswered, and they are reported as not written.
UnwrittenRecords::Records RemoteTape::settle_writes_on_loss() noexcept {
  UnwrittenRecords::Records records;
  if (writes_in_flight_.empty()) return records;
  Stream& s = streams_.front();
  s.link.to_child = Fd();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  try {
    while (!writes_in_flight_.empty() && s.link.from_child.valid()) {
      if (!s.in->buffered()) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        pollfd p{s.link.from_child.get(), POLLIN, 0};
        if (left.count() <= 0 || retry_eintr(::poll, &p, nfds_t{1}, static_cast<int>(left.count())) <= 0)
          break;
      }
      rmt::Reply r = rmt::read_reply(*s.in);
      const InFlightWrite& w = writes_in_flight_.front();
      if (!r.ok || static_cast<std::uint64_t>(r.value) != w.request.size() - w.header) break;
      ++records_on_tape_;
      writes_in_flight_.pop_front();
    }
  } catch (const std::exception&) {
    // The end of the answers: the link or the server is gone.
  }
  for (const InFlightWrite& w : writes_in_flight_) {
    auto payload = std::as_bytes(std::span(w.request)).subspan(w.header);
    records.emplace_back(payload.begin(), payload.end());
  }
  writes_in_flight_.clear();
  write_bytes_in_flight_ = 0;
  return records;
}

void RemoteTape::send(std::string_view bytes, const std::string& action) {
  const std::size_t stream = sent_ % streams_.size();
  Stream& s = streams_[stream];
  if (broken_ || !s.link.to_child.valid())
    throw Error(EIO, "rmt link to " + name() + ": connection lost");
  SigpipeGuard guard;
  try {
    write_all(s.link.to_child.get(), std::as_bytes(std::span(bytes.data(), bytes.size())),
              "rmt link");
  } catch (const Interrupted& e) {
    // A stop (a signal, buffer's --timeout) while the link would take no
    // more: the server is not reading, so waiting for its shell to end
    // would only prolong the hang. Part of a request may have gone out, so
    // the session cannot go on; close() ends it at once. None of the
    // caller's bytes count as written: a cut request writes nothing.
    broken_ = true;
    throw Interrupted(e.context());
  } catch (const Error& e) {
    // EPIPE: the remote shell is gone, which a read would have called a
    // lost connection too; which of the two notices first is chance.
    lose_connection(action,
                    e.errnum() == EPIPE ? std::string("connection lost")
                                        : std::string("connection lost (") + e.what() + ")",
                    stream);
  }
  ++sent_;
}

rmt::Reply RemoteTape::receive(const std::string& action, rmt::ReplyValue value) {
  const std::size_t stream = taken_ % streams_.size();
  try {
    rmt::Reply r = rmt::read_reply(*streams_[stream].in, value);
    reply_in_ = streams_[stream].in.get();
    ++taken_;
    if (r.fatal) lose_connection(action, "server gave up: " + r.text, stream);
    // Our rmt's answer to everything once another stream was lost.
    if (streams_.size() > 1 && !r.ok && r.errnum == ECONNABORTED) lose_stream(-1, action, r.text);
    return r;
  } catch (const rmt::ProtocolError& e) {
    lose_connection(action,
                    e.kind() == rmt::ProtocolError::Kind::truncated
                        ? std::string("connection lost")
                        : std::string("protocol error: ") + e.what(),
                    stream);
  } catch (const Interrupted&) {
    // The reply may still come: a retried request would take it for its own.
    broken_ = true;
    throw;
  } catch (const Error& e) {
    if (e.errnum() != ETIMEDOUT || !connecting_) throw;
    // A shell still trying to reach the host does not read its input, so it
    // would not see the end of it: it is ended at once.
    broken_ = true;
    hang_up(true);
    throw Error(ETIMEDOUT, action + " " + name() + ": no answer from " + shell_ + " within " +
                               std::to_string(connect_timeout_) +
                               " s (--connect-timeout or TAPEKIT_CONNECT_TIMEOUT sets the limit)");
  }
}

std::int64_t RemoteTape::transact(std::string_view request, const std::string& action) {
  send(request, action);
  rmt::Reply r = receive(action);
  if (!r.ok) throw Error(r.errnum, action + " " + name());
  return r.value;
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
  request_.append(reinterpret_cast<const char*>(data.data()), data.size());
  send(request_, "write");
  rmt::Reply r = receive("write");
  if (!r.ok) throw Error(r.errnum, "write " + name());
  ++records_on_tape_;
  if (static_cast<std::uint64_t>(r.value) != data.size())
    throw Error(ENOSPC, "write " + name(),
                static_cast<std::size_t>(std::min<std::int64_t>(r.value, static_cast<std::int64_t>(data.size()))));
}

void RemoteTape::probe_version(const std::string& action, bool ask_framing) {
  if (version_ != Version::unknown) return;
  // v1 servers (ours, rmt-dump, star, Solaris) answer exactly A1 and then
  // take portable op numbers; others fail the bogus ioctl and stay raw.
  std::string probe = "I-1\n0\n";
  if (ask_framing) probe += rmt::line_reader_probe;
  send(probe, action);
  if (ask_framing) ++sent_;  // two requests in one write
  rmt::Reply r = receive(action);
  version_ = r.ok && r.value == 1 ? Version::v1 : Version::v0;
  if (ask_framing) take_framing_reply(action);
}

void RemoteTape::take_framing_reply(const std::string& action) {
  rmt::Reply r = receive(action);
  // A v1 server is never sent S; what it answered does not matter.
  if (version_ == Version::v0)
    status_framing_ = rmt::answers_as_line_reader(r) ? StatusFraming::line : StatusFraming::byte;
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
    // A server without v1 takes the client's numbers: Linux ones (§7.4).
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
    // clear it when it is read (§8.2). Each is the server's mtget field as
    // it is, so it may be negative: st's -1 for a file or block number it
    // does not know (at end of data, with no tape, while not ready), and a
    // register with its top bit set (EOF in mt_gstat, a density code from
    // 0x80 in mt_dsreg) from a server whose long has 32 bits.
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
  auto m = decode_mtget(bytes);
  if (!m) throw Error(EPROTO, "tape status of " + name() + " (" + std::to_string(raw.size()) +
                                  "-byte struct mtget not understood)");
  return status_from_mtget(*m);
}

bool RemoteTape::server_is_tapekit(const std::string& action) {
  if (!tapekit_) {
    probe_version(action);
    bool known = false;
    if (version_ == Version::v1) {
      // The first exchange waited for the login too; these are round trips
      // alone, which --streams auto sizes the streams by. It takes the least
      // of three: on a busy machine one exchange can hold a scheduling delay
      // longer than the link's whole round trip.
      // Each is also less the time this thread and the remote shell spent
      // runnable but waiting for a CPU: on a loaded host that is CPU delay,
      // not the link's, and more streams would only add ssh processes to
      // a machine already short of CPU. (A far host's scheduling delay
      // cannot be told apart from its link's.)
      const int samples = streams_wanted_ == 0 ? 3 : 1;
      const std::string shell = std::to_string(streams_[0].link.process.pid());
      known = true;
      for (int k = 0; k < samples && known; ++k) {
        auto waited = run_queue_wait("thread-self") + run_queue_wait(shell);
        auto start = std::chrono::steady_clock::now();
        send("i" + std::to_string(rmt::tapekit_identify_op) + "\n0\n", action);
        rmt::Reply r = receive(action);
        auto took = std::chrono::steady_clock::now() - start;
        waited = run_queue_wait("thread-self") + run_queue_wait(shell) - waited;
        took = std::max<std::chrono::nanoseconds>(took - waited, std::chrono::nanoseconds{0});
        if (k == 0 || took < round_trip_) round_trip_ = took;
        known = r.ok && r.value == rmt::tapekit_identify_op;
      }
    }
    tapekit_ = known;
  }
  return *tapekit_;
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

std::int64_t RemoteTape::seek(std::int64_t offset, int whence) {
  settle("seek");
  // The servers that speak v1 (ours, rmt-dump, star) read the offset first;
  // of the others, GNU rmt, the one a Linux host has, reads the whence
  // first (§6.2). Only BSD's own rmt is left out: it has no v1 either.
  probe_version();
  if (version_ == Version::v1 && whence == SEEK_SET && (offset == 1 || offset == 2)) {
    // "L1\n0\n" and "L2\n0\n" read as whence-first to a server that infers
    // the order (§6.4, tar never seeks to byte 1 or 2), so get there in two
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
  std::exception_ptr unwritten;  // or any other failure to settle
  try {
    settle("close");
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

void RemoteTape::agree_pipeline(const std::string& action) {
  if (pipeline_asked_) return;
  pipeline_asked_ = true;
  // Only a v1 server may see an "i" request (GNU rmt ends the session on
  // one); of those, others refuse this op without side effects. I-1 costs
  // rmt-dump its raw op numbers above 10, which only mt sends, and mt
  // neither reads nor writes.
  if (tapekit_.has_value()) {
    if (!*tapekit_) return;
  } else {
    probe_version("pipeline");
    if (version_ != Version::v1) return;
  }
  send(pipeline_request(), "pipeline");
  take_pipeline_reply(action);
  // Only tapekit's rmt pipelines, and only it takes streams.
  if (pipelined_)
    join_streams(action);
  else
    end_joiners(joiners_);
}

std::string RemoteTape::pipeline_request() {
  return "i" + std::to_string(rmt::tapekit_pipeline_op) + "\n" +
         std::to_string(rmt::pipeline_version) + "\n";
}

void RemoteTape::take_pipeline_reply(const std::string& action) {
  pipeline_asked_ = true;
  rmt::Reply r = receive(action);
  pipelined_ = r.ok && r.value >= 1;
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

void RemoteTape::acknowledge_stop() {
  transact("i" + std::to_string(rmt::tapekit_acknowledge_op) + "\n0\n", "acknowledge");
  server_stopped_ = false;
}

bool RemoteTape::reply_ready() {
  Stream& s = receiving();
  if (s.in->buffered()) return true;
  pollfd p{s.link.from_child.get(), POLLIN, 0};
  return retry_eintr(::poll, &p, nfds_t{1}, 0) > 0;
}

void RemoteTape::write_pipelined(std::span<const std::byte> data) {
  if (server_stopped_) acknowledge_stop();
  while (!writes_in_flight_.empty() && reply_ready()) take_write_reply();
  while (!writes_in_flight_.empty() &&
         (write_bytes_in_flight_ + data.size() > write_window_ ||
          writes_in_flight_.size() >= rmt::pipelined_max_requests)) {
    // The window is full and the oldest reply has not come. If what we
    // sent has left the pipe too, the round trip, not the link, is what
    // holds the records back: a larger window carries more. Otherwise the
    // link is the limit and a larger window would only hold more memory.
    auto all_sent = [this] {
      for (const Stream& s : streams_) {
        int unsent = 0;
        if (::ioctl(s.link.to_child.get(), FIONREAD, &unsent) != 0 || unsent != 0) return false;
      }
      return true;
    };
    if (write_window_ < max_window && !reply_ready() && all_sent())
      write_window_ = std::min(write_window_ * 2, max_window);
    take_write_reply();
  }
  InFlightWrite w;
  if (!spare_requests_.empty()) {
    w.request = std::move(spare_requests_.back());
    spare_requests_.pop_back();
  }
  w.request = "W" + std::to_string(data.size()) + "\n";
  w.header = w.request.size();
  w.request.append(reinterpret_cast<const char*>(data.data()), data.size());
  send(w.request, "write");
  write_bytes_in_flight_ += data.size();
  writes_in_flight_.push_back(std::move(w));
}

void RemoteTape::take_write_reply() {
  rmt::Reply r = receive("write");
  InFlightWrite& w = writes_in_flight_.front();
  std::size_t size = w.request.size() - w.header;
  if (!r.ok || static_cast<std::uint64_t>(r.value) != size) fail_pipelined_writes(r);
  ++records_on_tape_;
  write_bytes_in_flight_ -= size;
  if (spare_requests_.size() < 8) spare_requests_.push_back(std::move(w.request));
  writes_in_flight_.pop_front();
}

void RemoteTape::fail_pipelined_writes(const rmt::Reply& failed) {
  UnwrittenRecords::Records records;
  auto keep = [&records](const InFlightWrite& w, std::size_t written) {
    auto payload = std::as_bytes(std::span(w.request)).subspan(w.header + written);
    if (!payload.empty()) records.emplace_back(payload.begin(), payload.end());
  };
  const InFlightWrite& first = writes_in_flight_.front();
  std::size_t size = first.request.size() - first.header;
  std::size_t written =
      failed.ok ? static_cast<std::size_t>(std::clamp<std::int64_t>(failed.value, 0,
                                                                    static_cast<std::int64_t>(size)))
                : 0;
  keep(first, written);
  writes_in_flight_.pop_front();
  // The server cancels every write after the failed one; a reply that says
  // otherwise (no server of ours sends it) still means the record is there.
  for (; !writes_in_flight_.empty(); writes_in_flight_.pop_front()) {
    rmt::Reply r = receive("write");
    const InFlightWrite& w = writes_in_flight_.front();
    if (!r.ok || static_cast<std::uint64_t>(r.value) != w.request.size() - w.header) keep(w, 0);
  }
  write_bytes_in_flight_ = 0;
  server_stopped_ = true;
  acknowledge_stop();
  throw UnwrittenRecords(failed.ok ? ENOSPC : failed.errnum, "write " + name(),
                         std::move(records));
}

std::size_t RemoteTape::read_ahead(std::span<std::byte> buf) {
  // Records read ahead with another buffer size might not fit this one.
  if (reads_ended_ || (reads_in_flight_ > 0 && buf.size() != read_size_)) settle_reads("read");
  if (server_stopped_) acknowledge_stop();
  read_size_ = buf.size();
  // Records in flight are bounded by what they hold, which is what the
  // last one held, not the (often much larger) buffer they may fill.
  std::size_t record = last_record_ > 0 ? last_record_ : read_size_;
  std::size_t most = std::min(rmt::pipelined_max_requests, std::max<std::size_t>(1, max_window / record));
  // A connection carries at most its ssh channel window a round trip, so
  // more read ahead on it only waits in the ssh client's buffers, which
  // OpenSSH then spends its time moving and reallocating (--streams 8 read
  // 128 MiB with 4 CPU-seconds, half of them memmove in ssh, and at half
  // the speed, against 1 CPU-second capped).
  if (streams_.size() > 1)
    most = std::min(most, std::max<std::size_t>(streams_.size(),
                                                streams_.size() * ssh_channel_window / record));
  // Streams ask a channel window each from the start, by the size of the
  // records once one is known. One connection grows its window instead:
  // waiting for the reply means the requests in flight do not cover the
  // round trip, so it asks further ahead next time.
  if (streams_.size() > 1) {
    read_window_ = most;
  } else {
    if (reads_in_flight_ > 0 && !reply_ready()) read_window_ = std::min(read_window_ * 2, most);
    read_window_ = std::min(read_window_, most);
  }
  request_ = "R" + std::to_string(read_size_) + "\n";
  if (streams_.size() > 1) {
    // One request per stream in turn.
    for (; reads_in_flight_ < read_window_; ++reads_in_flight_) send(request_, "read");
  } else if (reads_in_flight_ < read_window_) {
    std::string requests;
    for (std::size_t n = reads_in_flight_; n < read_window_; ++n) requests += request_;
    send(requests, "read");
    sent_ += read_window_ - reads_in_flight_ - 1;
    reads_in_flight_ = read_window_;
  }
  --reads_in_flight_;
  std::size_t n = take_read_reply(buf);
  if (n > 0) last_record_ = n;
  return n;
}

void RemoteTape::settle(const std::string& action) {
  while (!writes_in_flight_.empty()) take_write_reply();
  if (reads_in_flight_ > 0) settle_reads(action);
}

void RemoteTape::settle_reads(const std::string& action) {
  // What the server did for the reads the caller never took: records it
  // passed, and whether one reached the end of the file (cancelled reads
  // did nothing).
  std::uint64_t records = 0;
  std::uint64_t bytes = 0;
  bool passed_end = false;
  for (; reads_in_flight_ > 0; --reads_in_flight_) {
    rmt::Reply r = receive(action);
    if (r.ok && r.value > 0) {
      if (static_cast<std::uint64_t>(r.value) > read_size_)
        lose_connection(action, "server sent " + std::to_string(r.value) + " bytes for " +
                                    std::to_string(read_size_));
      std::uint64_t got = 0;
      const std::size_t stream = (taken_ - 1) % streams_.size();
      try {
        got = reply_in_->discard(static_cast<std::uint64_t>(r.value));
      } catch (const Error& e) {
        lose_connection(action, e.what(), stream);
      }
      if (got < static_cast<std::uint64_t>(r.value))
        lose_connection(action, "connection lost", stream);
      ++records;
      bytes += got;
    } else if (r.ok) {
      passed_end = true;
    } else if (r.errnum != ECANCELED) {
      ++records;  // a bad record is passed, as the next read shows
    }
    if (!r.ok || r.value == 0) server_stopped_ = true;
  }
  reads_ended_ = false;
  // The stop is acknowledged before the next R or W, not here: spacing back
  // is not cancelled, and after a close nothing needs it.
  if (records > 0 || passed_end) step_back(records, bytes, passed_end);
}

void RemoteTape::step_back(std::uint64_t records, std::uint64_t bytes, bool passed_end) {
  // The caller must find the tape where its own reads left it. Records are
  // spaced back over, exactly; a filemark read ahead but not taken is
  // spaced back over too, which leaves the block number unknown, as st
  // leaves it after bsf (callers that expect_sequential_reads() take the
  // filemark unless they stop early). At end of data the read moved nothing.
  if (passed_end) {
    send("sf", "read-ahead");
    rmt::Reply r = receive("read-ahead", rmt::ReplyValue::field);
    if (!r.ok || (static_cast<std::uint64_t>(register_bits(r.value)) & gmt::eod) == 0)
      op(MtOp::bsf, 1);
  }
  if (records == 0) return;
  try {
    op(MtOp::bsr, static_cast<int>(records));
  } catch (const Error& e) {
    // A file read through rmt: its offset goes back by the bytes instead.
    if (e.errnum() != ENOTTY && e.errnum() != EINVAL) throw;
    seek(-static_cast<std::int64_t>(bytes), SEEK_CUR);
  }
}

}  // namespace tk

namespace tk {

void RemoteTape::show_held_stderr(Stream& s) noexcept {
  if (!s.held_stderr.valid()) return;
  char chunk[4096];
  for (;;) {
    ssize_t n = ::pread(s.held_stderr.get(), chunk, sizeof chunk, static_cast<off_t>(s.held_stderr_shown));
    if (n <= 0) return;
    s.held_stderr_shown += static_cast<std::uint64_t>(n);
    try {
      write_all(2, std::as_bytes(std::span(chunk, static_cast<std::size_t>(n))), "standard error");
    } catch (const Error&) {
      return;
    }
  }
}

void RemoteTape::start_streams(bool hold_stderr) {
  const int count = streams_wanted_ > 0 ? streams_wanted_ : auto_streams(round_trip_, stream_rate_);
  for (int k = 1; k < count; ++k) {
    try {
      joiners_.push_back(open_stream(hold_stderr));
    } catch (const Error& e) {
      Stream failed;
      failed.failure = e.what();
      joiners_.push_back(std::move(failed));
    }
  }
}

void RemoteTape::end_joiners(std::vector<Stream>& joiners) noexcept {
  // None of them has a request of ours to finish: their shells are ended
  // at once (a login still under way would not notice its input ending).
  for (Stream& s : joiners) {
    s.link.to_child = Fd();
    s.link.from_child = Fd();
  }
  for (Stream& s : joiners) {
    if (s.link.process.pid() <= 0) continue;
    try {
      s.link.process.terminate();
    } catch (const Error&) {
    }
  }
  joiners.clear();
}

void RemoteTape::join_streams(const std::string& action) {
  if (joiners_.empty()) return;
  send(streams_request(), "streams");
  take_streams_reply(action);
}

std::string RemoteTape::streams_request() const {
  return "i" + std::to_string(rmt::tapekit_streams_op) + "\n" +
         std::to_string(joiners_.size() + 1) + "\n";
}

void RemoteTape::take_streams_reply(const std::string& action) {
  const std::size_t count = joiners_.size() + 1;
  rmt::Reply r = receive("streams");
  if (!r.ok) return end_joiners(joiners_);  // a tapekit rmt from before streams: one it is
  if (r.value <= 0 || static_cast<std::uint64_t>(r.value) > rmt::max_join_token)
    lose_connection(action, "bad join token from the server");
  std::string token(static_cast<std::size_t>(r.value), '\0');
  if (reply_in_->read_exact(std::as_writable_bytes(std::span(token.data(), token.size()))) <
      token.size())
    lose_connection(action, "connection lost");
  // The shells were started before the open; most have logged in by now.
  for (std::size_t k = 1; k < count; ++k) {
    Stream& s = joiners_[k - 1];
    if (!s.failure.empty()) continue;
    std::string join = "i" + std::to_string(rmt::tapekit_join_op) + "\n" + std::to_string(k) +
                       ":" + token + "\n";
    SigpipeGuard guard;
    try {
      write_all(s.link.to_child.get(), std::as_bytes(std::span(join.data(), join.size())),
                "rmt link");
    } catch (const Error&) {
      s.failure = "connection lost";
    }
  }
  // Each must be answered, as the open was, within the connect timeout.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(connect_timeout_);
  std::vector<bool> stuck(count, false);
  for (std::size_t k = 1; k < count; ++k) {
    Stream& s = joiners_[k - 1];
    if (!s.failure.empty()) continue;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    s.source->set_timeout(connect_timeout_ > 0 ? static_cast<int>(std::max<std::int64_t>(left.count(), 1)) : -1);
    try {
      rmt::Reply joined = rmt::read_reply(*s.in);
      if (!joined.ok)
        s.failure = "refused: " + joined.text;
      else if (joined.value != static_cast<std::int64_t>(k))
        s.failure = "joined as the wrong stream";
    } catch (const rmt::ProtocolError&) {
      s.failure = "connection lost";
    } catch (const Error& e) {
      stuck[k] = e.errnum() == ETIMEDOUT;
      s.failure = stuck[k] ? "no answer within " + std::to_string(connect_timeout_) +
                                 " s (--connect-timeout)"
                           : std::string(e.what());
    }
    if (s.source) s.source->set_timeout(-1);
  }
  std::vector<Stream> joined;
  std::int64_t mask = 0;
  std::vector<std::string> warnings;
  for (std::size_t k = 1; k < count; ++k) {
    Stream& s = joiners_[k - 1];
    if (s.failure.empty()) {
      show_held_stderr(s);
      mask |= std::int64_t{1} << k;
      joined.push_back(std::move(s));
      continue;
    }
    // How its shell ended is what to fix (a refused key, an unknown host).
    s.link.to_child = Fd();
    s.link.from_child = Fd();
    int status = -1;
    if (s.link.process.pid() > 0) {
      try {
        status = stuck[k] ? s.link.process.terminate() : s.link.process.wait_or_terminate(5);
      } catch (const Error&) {
      }
    }
    show_held_stderr(s);  // the shell's own words on why: a refused key, an unknown host
    std::string how = stuck[k] || status == -1 || status == 0
                          ? ""
                          : "; the " + shell_ + " ended with " + describe_wait_status(status);
    warnings.push_back(action + " " + name() + ": stream " + std::to_string(k + 1) + " of " +
                       std::to_string(count) + " could not join (" + s.failure + how + ")");
  }
  joiners_.clear();
  if (!warnings.empty()) {
    // The server keeps the ones we saw join, and lets the others go.
    send("i" + std::to_string(rmt::tapekit_streams_kept_op) + "\n" + std::to_string(mask) + "\n",
         "streams");
    rmt::Reply answer = receive("streams");
    std::int64_t kept = answer.value;
    if (!answer.ok) {
      end_joiners(joined);  // a server from before partial sets let them go
      kept = 1;
    }
    if (kept != static_cast<std::int64_t>(joined.size() + 1))
      lose_connection(action, "the server kept " + std::to_string(kept) + " streams of " +
                                  std::to_string(joined.size() + 1));
    for (const std::string& w : warnings)
      if (warn_) warn_(w + "; going on with " + std::to_string(kept) +
                       (kept == 1 ? " stream" : " streams"));
  }
  for (Stream& s : joined) streams_.push_back(std::move(s));
  sent_ = taken_ = 0;
  // Each stream carries a channel window a round trip from the start: the
  // windows start there instead of doubling up to it over round trips.
  const std::size_t carried = std::min<std::size_t>(max_window, streams_.size() * ssh_channel_window);
  write_window_ = std::max(write_window_, carried);
}

void RemoteTape::lose_stream(int stream, const std::string& action, const std::string& why) {
  broken_ = true;
  const std::size_t n = streams_.size();
  // What the server knows, asked on a stream still up after the replies
  // still due there (protocol.hpp: it answers this much after a loss).
  std::optional<std::int64_t> written;
  std::int64_t lost_by_server = 0;
  for (std::size_t s = 0; s < n && !written; ++s) {
    if (static_cast<int>(s) == stream || !streams_[s].link.to_child.valid()) continue;
    Stream& up = streams_[s];
    try {
      up.source->set_timeout(question_timeout_ms);
      for (std::uint64_t q = taken_; q < sent_; ++q) {
        if (q % n != s) continue;
        rmt::Reply r = rmt::read_reply(*up.in);
        if (r.ok && r.value > 0 && reads_in_flight_ > 0 &&
            up.in->discard(static_cast<std::uint64_t>(r.value)) < static_cast<std::uint64_t>(r.value))
          break;
      }
      std::string question = "i" + std::to_string(rmt::tapekit_session_op) + "\n0\ni" +
                             std::to_string(rmt::tapekit_session_op) + "\n1\n";
      SigpipeGuard guard;
      write_all(up.link.to_child.get(), std::as_bytes(std::span(question.data(), question.size())),
                "rmt link");
      rmt::Reply count = rmt::read_reply(*up.in);
      rmt::Reply which = rmt::read_reply(*up.in);
      if (count.ok) written = count.value;
      if (which.ok) lost_by_server = which.value;
    } catch (const Error&) {
      // This one is gone too; the next may answer.
    }
  }
  if (stream < 0 && lost_by_server > 0) stream = static_cast<int>(lost_by_server - 1);
  int status = hang_up(false, stream < 0 ? 0 : static_cast<std::size_t>(stream));
  std::string how = stream < 0 || status == -1 || status == 0
                        ? ""
                        : "; the " + shell_ + " ended with " + describe_wait_status(status);
  std::string which_stream = stream < 0 ? "a stream of " + std::to_string(n)
                                        : "stream " + std::to_string(stream + 1) + " of " +
                                              std::to_string(n);
  std::string text = action + " " + name() + ": " + which_stream + " lost (" + why + how + ")";
  UnwrittenRecords::Records records;
  if (reading_ && writes_in_flight_.empty()) {
    text += "; " + std::to_string(records_read_) +
            (records_read_ == 1 ? " record was" : " records were") + " read";
  } else if (written) {
    // Records reach the tape in order: those in flight up to the count the
    // server gave are there, the rest are not.
    std::uint64_t on_tape = static_cast<std::uint64_t>(*written);
    std::uint64_t index = records_on_tape_;
    for (const InFlightWrite& w : writes_in_flight_) {
      if (index++ < on_tape) continue;
      auto payload = std::as_bytes(std::span(w.request)).subspan(w.header);
      records.emplace_back(payload.begin(), payload.end());
    }
    text += "; " + std::to_string(on_tape) + (on_tape == 1 ? " record is" : " records are") +
            " on the tape";
  } else if (!writes_in_flight_.empty()) {
    // No stream could say: the writes in flight are neither on the tape nor
    // lost as far as anyone knows. They stay counted in flight
    // (writes_in_flight()), so that a caller's own count says the same.
    text += "; at least " + std::to_string(records_on_tape_) + " records are on the tape, up to " +
            std::to_string(writes_in_flight_.size()) + " more may be";
    reads_in_flight_ = 0;
    throw StreamLost(text, std::move(records));
  }
  writes_in_flight_.clear();
  write_bytes_in_flight_ = 0;
  reads_in_flight_ = 0;
  throw StreamLost(text, std::move(records));
}

}  // namespace tk
