// The rmt client's link: one connection's requests and replies (send,
// receive, transact), the loss of the connection, the version and tapekit
// probes, and the remote shell spawned to carry it.
#include "remote_tape.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "remote_internal.hpp"

namespace tk {

using detail::SigpipeGuard;

namespace {

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
  Unwritten unwritten = settle_writes_on_loss();
  int status = hang_up();
  // Most lost links are a remote shell that failed (unknown host, refused
  // key, no rmt there): say how it ended, since that is what to fix.
  // A shell that exited 0 explains nothing: the server simply went away.
  std::string how = status == -1 || status == 0
                        ? ""
                        : "; the " + shell_ + " ended with " + describe_wait_status(status);
  std::string text = action + " " + name() + ": " + why + how;
  lost_reason_ = why + how;
  if (unconfirmed_.records > 0) resolve_unconfirmed(unwritten);
  if (unwritten.records == 0 && unconfirmed_.records == 0) throw Error(EIO, text);
  text += "; " + std::to_string(records_on_tape_) +
          (records_on_tape_ == 1 ? " record is" : " records are") + " on the tape";
  if (unconfirmed_.records > 0) {
    text += std::string(unconfirmed_.bytes_there ? ": " : ", ") +
            std::to_string(unconfirmed_.records) + " more (" + std::to_string(unconfirmed_.bytes) +
            " bytes) were sent; the server did not confirm them";
    if (unconfirmed_.bytes_there)
      text += ", and a read-back found " + std::to_string(*unconfirmed_.bytes_there) +
              " of those bytes in the file";
  }
  // Even with nothing known to be lost, a LostWrites: the caller's count of
  // what reached the tape has to be looked at again.
  throw UnwrittenRecords(EIO, text, unwritten.records, unwritten.bytes);
}

void RemoteTape::send(std::string_view bytes, const std::string& action,
                      std::span<const std::byte> payload) {
  const std::size_t stream = sent_ % streams_.size();
  Stream& s = streams_[stream];
  if (broken_ || !s.link.to_child.valid())
    throw Error(EIO, "rmt link to " + name() + ": connection lost");
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
    if (e.errnum() != ETIMEDOUT || !(connecting_ || opening_)) throw;
    // A shell still trying to reach the host does not read its input, so it
    // would not see the end of it: it is ended at once.
    broken_ = true;
    hang_up(true);
    if (opening_)
      throw Error(ETIMEDOUT, action + " " + name() + ": the device did not open within " +
                                 std::to_string(open_timeout_) +
                                 " s (--open-timeout or TAPEKIT_OPEN_TIMEOUT sets the limit)");
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

void RemoteTape::probe_version(const std::string& action, bool ask_framing) {
  if (version_ != Version::unknown) return;
  // The framing probe rides in the version probe's write, on one stream,
  // while replies are taken from the streams in turn. Parallel streams are
  // only ever agreed with tapekit's rmt, which needs no framing probe.
  if (streams_.size() > 1) ask_framing = false;
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
  if (version_ == Version::v0) {
    status_framing_ = rmt::answers_as_line_reader(r) ? StatusFraming::line : StatusFraming::byte;
    framing_probe_answered_v1_ = r.ok && r.value == 1;
  }
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
      // cannot be told apart from its link's.) Only waits that made the
      // reply later may count, so this thread's are read from after the
      // request has left (the process a write wakes often takes the CPU
      // from the writer, while the request goes on its way regardless),
      // both within the timed span, and the reply is waited for asleep,
      // not watched for (a watching thread that yields its CPU waits
      // runnable while the reply is still on its way). On a loaded machine
      // either wait can be most of the round trip.
      const int samples = streams_wanted_ == 0 ? 3 : 1;
      const std::string shell = std::to_string(streams_[0].link.process.pid());
      rmt::FdSource& source = *streams_[0].source;
      source.set_busy_poll(std::chrono::microseconds{0});
      known = true;
      for (int k = 0; k < samples && known; ++k) {
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

}  // namespace tk
