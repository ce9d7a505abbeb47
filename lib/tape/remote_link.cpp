// The rmt client's link: the remote shells, one session's requests and
// replies over them (send, receive, transact), the version, framing and
// tapekit probes, the open's timeouts and the hang-up.
#include "remote_link.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "open_wait.hpp"
#include "remote_internal.hpp"

namespace tk {

using detail::SigpipeGuard;

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

void RemoteStream::show_held_stderr() noexcept {
  if (!held_stderr.valid()) return;
  char chunk[4096];
  for (;;) {
    ssize_t n = ::pread(held_stderr.get(), chunk, sizeof chunk, static_cast<off_t>(held_stderr_shown));
    if (n <= 0) return;
    held_stderr_shown += static_cast<std::uint64_t>(n);
    try {
      write_all(2, std::as_bytes(std::span(chunk, static_cast<std::size_t>(n))), "standard error");
    } catch (const Error&) {
      return;
    }
  }
}

RemoteLink::RemoteLink(const std::string& name, const OpenOptions& options, Owner& owner)
    : owner_(owner), name_(name), remote_(parse_remote_name(name)) {
  connect_timeout_ = timeout_seconds(options.connect_timeout, "TAPEKIT_CONNECT_TIMEOUT",
                                     default_connect_timeout);
  open_timeout_ = timeout_seconds(options.open_timeout, "TAPEKIT_OPEN_TIMEOUT", 0);
  // --streams auto counts by the identify exchange's round trip.
  if (std::clamp(options.streams, 0, static_cast<int>(rmt::max_streams)) == 0) identify_samples_ = 3;
  argv_ = split_blanks(pick(options.rsh_command, "RSH", "ssh"));
  if (argv_.empty()) throw Error(EINVAL, "open " + name + ": empty remote shell command");
  argv_.push_back(remote_.host);
  if (!remote_.user.empty()) {
    argv_.push_back("-l");
    argv_.push_back(remote_.user);
  }
  rmt_command_ = pick(options.rmt_command, "RMT", "/etc/rmt");
  argv_.push_back(rmt_command_);
  shell_ = "remote shell " + argv_.front() + " for " + remote_.host;
  streams_.push_back(open_stream());
  // "Connected" means rmt answered: a remote shell that never starts the
  // server (a host that is down, a stuck login) must not hang us. Opening
  // the device is the drive's time, not the connection's (below).
  connecting_ = true;
  streams_[0].source->set_timeout(connect_timeout_ > 0 ? connect_timeout_ * 1000 : -1);
}

RemoteStream RemoteLink::open_stream(bool hold_stderr) {
  RemoteStream s;
  if (hold_stderr)
    s.held_stderr = above_stdio(Fd(::memfd_create("remote shell stderr", MFD_CLOEXEC)));
  s.link = spawn_piped(argv_, s.held_stderr.get());
  // A W request with a large record then leaves in one write(2).
  grow_pipe(s.link.to_child.get(), std::size_t{1} << 20);
  grow_pipe(s.link.from_child.get(), std::size_t{1} << 20);
  s.source = std::make_unique<rmt::FdSource>(s.link.from_child.get(), "rmt link to " + remote_.host);
  s.source->set_busy_poll(rmt::default_busy_poll());
  s.in = std::make_unique<rmt::BufferedReader>(*s.source, 16 * 1024);
  return s;
}

void RemoteLink::add_streams(std::vector<RemoteStream>&& joined) {
  for (RemoteStream& s : joined) streams_.push_back(std::move(s));
  sent_ = taken_ = 0;
}

void RemoteLink::wait_for_the_open() {
  connecting_ = false;
  opening_ = true;
  rmt::FdSource& source = *streams_[0].source;
  source.set_timeout(open_timeout_ > 0 ? open_timeout_ * 1000 : -1);
  // A person at a terminal learns that the drive is still opening (an LTO
  // loading takes up to a minute), not a hung backup; a script hears nothing.
  if (::isatty(STDERR_FILENO) == 1) {
    const std::string name = name_;
    source.set_wait_note([name](std::chrono::seconds waited) {
      const std::string line =
          "waiting for " + name + " to open, " + std::to_string(waited.count()) + " s\n";
      (void)!::write(STDERR_FILENO, line.data(), line.size());
    });
  }
}

void RemoteLink::opened() {
  opening_ = false;
  streams_[0].source->set_timeout(-1);
  streams_[0].source->set_wait_note({});
}

int RemoteLink::hang_up(bool at_once, std::size_t which) noexcept {
  // Every link is closed before any shell is waited for, so that they all
  // see the end of their input at once.
  for (RemoteStream& s : streams_) {
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
    streams_[i].show_held_stderr();
  }
  return status;
}

void RemoteLink::close_requests() noexcept {
  for (RemoteStream& s : streams_) s.link.to_child = Fd();
}

void RemoteLink::send(std::string_view bytes, const std::string& action,
                      std::span<const std::byte> payload, std::uint64_t requests) {
  const std::size_t stream = sent_ % streams_.size();
  RemoteStream& s = streams_[stream];
  if (broken_ || !s.link.to_child.valid())
    throw Error(EIO, "rmt link to " + name_ + ": connection lost");
  SigpipeGuard guard;
  try {
    write_all(s.link.to_child.get(), std::as_bytes(std::span(bytes.data(), bytes.size())), payload,
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
    lose(action,
         e.errnum() == EPIPE ? std::string("connection lost")
                             : std::string("connection lost (") + e.what() + ")",
         stream);
  }
  sent_ += requests;
}

rmt::Reply RemoteLink::receive(const std::string& action, rmt::ReplyValue value) {
  const std::size_t stream = taken_ % streams_.size();
  try {
    rmt::Reply r = rmt::read_reply(*streams_[stream].in, value);
    reply_in_ = streams_[stream].in.get();
    ++taken_;
    if (r.fatal) lose(action, "server gave up: " + r.text, stream);
    // Our rmt's answer to everything once another stream was lost.
    if (streams_.size() > 1 && !r.ok && r.errnum == ECONNABORTED)
      owner_.lose_stream(-1, action, r.text);
    return r;
  } catch (const rmt::ProtocolError& e) {
    lose(action,
         e.kind() == rmt::ProtocolError::Kind::truncated
             ? std::string("connection lost")
             : std::string("protocol error: ") + e.what(),
         stream);
  } catch (const Interrupted&) {
    // The reply may still come: a retried request would take it for its own.
    broken_ = true;
    throw;
  } catch (const Error& e) {
    if (e.errnum() != ETIMEDOUT || !(connecting_ || opening_)) throw;
    // A shell still trying to reach the host does not read its input, so it
    // would not see the end of it: it is ended at once.
    broken_ = true;
    owner_.hang_up(true, 0);
    if (opening_)
      throw Error(ETIMEDOUT, action + " " + name_ + ": the device did not open within " +
                                 std::to_string(open_timeout_) +
                                 " s (--open-timeout or TAPEKIT_OPEN_TIMEOUT sets the limit)");
    throw Error(ETIMEDOUT, action + " " + name_ + ": no answer from " + shell_ + " within " +
                               std::to_string(connect_timeout_) +
                               " s (--connect-timeout or TAPEKIT_CONNECT_TIMEOUT sets the limit)");
  }
}

void RemoteLink::lose(const std::string& action, const std::string& why, std::size_t stream) {
  owner_.lose_connection(action, why, stream);
  // Never reached: the owner throws, which a virtual call does not show.
  throw Error(EIO, action + " " + name_ + ": " + why);
}

std::int64_t RemoteLink::transact(std::string_view request, const std::string& action) {
  send(request, action);
  rmt::Reply r = receive(action);
  if (!r.ok) throw Error(r.errnum, action + " " + name_);
  return r.value;
}

bool RemoteLink::reply_ready() {
  RemoteStream& s = streams_[taken_ % streams_.size()];
  if (s.in->buffered()) return true;
  pollfd p{s.link.from_child.get(), POLLIN, 0};
  return retry_eintr(::poll, &p, nfds_t{1}, 0) > 0;
}

bool RemoteLink::all_sent() {
  for (const RemoteStream& s : streams_) {
    int unsent = 0;
    if (::ioctl(s.link.to_child.get(), FIONREAD, &unsent) != 0 || unsent != 0) return false;
  }
  return true;
}

void RemoteLink::probe_version(const std::string& action, bool ask_framing) {
  if (version_ != Version::unknown) return;
  // The framing probe rides in the version probe's write, on one stream,
  // while replies are taken from the streams in turn. Parallel streams are
  // only ever agreed with tapekit's rmt, which needs no framing probe.
  if (streams_.size() > 1) ask_framing = false;
  // v1 servers (ours, rmt-dump, star, Solaris) answer exactly A1 and then
  // take portable op numbers; others fail the bogus ioctl and stay raw.
  std::string probe = "I-1\n0\n";
  if (ask_framing) probe += rmt::line_reader_probe;
  send(probe, action, {}, ask_framing ? 2 : 1);  // two requests in one write
  rmt::Reply r = receive(action);
  version_ = r.ok && r.value == 1 ? Version::v1 : Version::v0;
  if (ask_framing) take_framing_reply(action);
}

void RemoteLink::take_framing_reply(const std::string& action) {
  rmt::Reply r = receive(action);
  // A v1 server is never sent S; what it answered does not matter.
  if (version_ == Version::v0) {
    status_framing_ = rmt::answers_as_line_reader(r) ? StatusFraming::line : StatusFraming::byte;
    framing_probe_answered_v1_ = r.ok && r.value == 1;
  }
}

bool RemoteLink::server_is_tapekit(const std::string& action) {
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
      // cannot be told apart from its link's.) Only waits that made the
      // reply later may count, so this thread's are read from after the
      // request has left (the process a write wakes often takes the CPU
      // from the writer, while the request goes on its way regardless),
      // both within the timed span, and the reply is waited for asleep,
      // not watched for (a watching thread that yields its CPU waits
      // runnable while the reply is still on its way). On a loaded machine
      // either wait can be most of the round trip.
      const std::string shell = std::to_string(streams_[0].link.process.pid());
      rmt::FdSource& source = *streams_[0].source;
      source.set_busy_poll(std::chrono::microseconds{0});
      known = true;
      for (int k = 0; k < identify_samples_ && known; ++k) {
        const auto start = std::chrono::steady_clock::now();
        auto waited = -run_queue_wait(shell);
        send("i" + std::to_string(rmt::tapekit_identify_op) + "\n0\n", action);
        waited -= run_queue_wait("thread-self");
        rmt::Reply r = receive(action);
        waited += run_queue_wait("thread-self") + run_queue_wait(shell);
        auto took = std::chrono::steady_clock::now() - start;
        took = std::max<std::chrono::nanoseconds>(took - waited, std::chrono::nanoseconds{0});
        if (k == 0 || took < round_trip_) round_trip_ = took;
        known = r.ok && r.value == rmt::tapekit_identify_op;
      }
      source.set_busy_poll(rmt::default_busy_poll());
    }
    tapekit_ = known;
  }
  return *tapekit_;
}

MtGet RemoteLink::status_struct() {
  // Only servers without v1 are asked S, so there is one stream.
  RemoteStream& only = streams_[0];
  if (status_framing_ == StatusFraming::unknown) {
    // The version was known before status was asked (an op probed it): the
    // question goes with S, which GNU rmt then waits to see the end of.
    send(std::string(rmt::line_reader_probe) + "S", "status", {}, 2);  // two requests in one write
    take_framing_reply("status");
    if (status_framing_ == StatusFraming::line)
      send("\n", "status", {}, 0);  // the newline was part of the S request
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
      if (e.errnum() != ETIMEDOUT) lose("status", "connection lost");
      send("\n", "status", {}, 0);  // the newline was part of the S request
      r = receive("status");
    }
  } else {
    r = receive("status");
  }
  if (!r.ok) throw Error(r.errnum, "tape status of " + name_);
  if (r.value > 4096) lose("status", "oversized status reply");
  std::string raw(static_cast<std::size_t>(r.value), '\0');
  auto bytes = std::as_writable_bytes(std::span(raw.data(), raw.size()));
  if (only.in->read_exact(bytes) < raw.size()) lose("status", "connection lost");
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
  if (!m) throw Error(EPROTO, "tape status of " + name_ + " (" + std::to_string(raw.size()) +
                                  "-byte struct mtget not understood)");
  return *m;
}

}  // namespace tk
