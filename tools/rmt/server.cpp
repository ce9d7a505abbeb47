// The rmt request loop over a Tape: one request, one reply, errors answered
// as E replies so the client carries on (docs/rmt-protocol.md, "Requests" and
// "Security"). Here: the session's construction and narrowing, its replies and
// W payloads, the loop and its dispatch, the session's end, and the
// broken-session path after a parallel stream was lost. The handlers are in
// handlers.cpp, the log in session_log.cpp, the streams in stream_set.cpp.
#include "server.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <pwd.h>
#include <syslog.h>
#include <unistd.h>

#include "../../lib/io.hpp"
#include "sandbox.hpp"
#include "session.hpp"

namespace tk::rmt_server {

Session::Session(const ServerOptions& options, int in_fd, int out_fd)
    : options_(options),
      policy_(options.allow, options.read_only, options.write_once),
      streams_(in_fd, out_fd, options.busy_poll, [this](const std::string& line) { log_line(line); }),
      own_stdio_({in_fd, out_fd, 2}),
      peer_(describe_peer(in_fd)) {
  limits_.drain = std::max<std::size_t>(limits_.drain, 64 * 1024);
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
      // The log's lines are not repeated on standard error, which the
      // remote shell takes to the client's terminal (tar's, every
      // session): what the user must hear (a refusal's reason, a hint) is
      // told there anyway. That the log is lost is said only to whoever
      // asked for it (--log syslog): as the system's rmt on a host with no
      // log daemon (a container), every cron run would mail it, where
      // rmt-tar and rmt-dump are silent.
      syslog_missing_ = true;
      if (options.log_given)
        tell_user("syslog is unavailable (" + problem +
                  "); the session log is not kept (--log FILE keeps it)");
    }
  } else if (options.log != "none") {
    log_ = open_log("--log", options.log);
  }
}

void Session::narrow() {
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

void Session::send(std::string_view bytes) {
  try {
    write_all(streams_.output(), std::as_bytes(std::span(bytes.data(), bytes.size())), "control output");
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

void Session::reply_ok_signed(std::int64_t value) {
  reply_.clear();
  rmt::append_ok_signed(reply_, value);
  debug(reply_);
  send(reply_);
}

void Session::reply_error(int errnum, std::string_view text) {
  reply_.clear();
  rmt::append_error(reply_, errnum, text);
  debug(reply_);
  send(reply_);
}

std::span<const std::byte> Session::receive_payload(std::size_t size) {
  streams_.source().set_timeout(options_.payload_timeout > 0 ? options_.payload_timeout * 1000 : -1);
  std::span<const std::byte> got;
  try {
    got = streams_.input().take(size);
  } catch (const Error& e) {
    throw SessionEnd{Exit::connection, std::string("W payload: ") + e.what()};
  }
  if (got.size() < size) premature_eof();
  return got;
}

void Session::drain_payload(std::uint64_t n) {
  streams_.source().set_timeout(options_.payload_timeout > 0 ? options_.payload_timeout * 1000 : -1);
  std::uint64_t got = 0;
  try {
    got = streams_.input().discard(n);
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

void Session::handle(const rmt::Request& r) {
  switch (r.command) {
    case 'O':
      streams_.release_after_reply();
      open(r);
      break;
    case 'C':
      streams_.release_after_reply();
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
    streams_.take_turn();
    streams_.source().set_timeout(options_.idle_timeout > 0 ? options_.idle_timeout * 1000 : -1);
    try {
      if (!rmt::read_request(streams_.input(), limits_, request_)) {
        // Our client ends a joined session with C first.
        if (streams_.parallel()) throw SessionEnd{Exit::connection, "end of input"};
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
    streams_.settle(request_);
    try {
      handle(request_);
    } catch (const Refusal& f) {
      reply_error(f.errnum, f.text);
    } catch (const Error& e) {
      reply_error(e.errnum(), std::strerror(e.errnum()));
    }
    streams_.pass_turn();
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
    if (streams_.parallel() && !stop_requested()) {
      // The stream whose turn it was ended (or its reply could not go): no
      // record can follow in order, so the tape gets its filemark now.
      status = Exit::connection;
      streams_.lose_turn();
      end = "stream " + std::to_string(streams_.lost()) + " of " + std::to_string(streams_.count()) +
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
  streams_.let_go();
  log_session(end);
  return static_cast<int>(status);
}

void Session::serve_broken(std::string& end) {
  try {
    close_tape();
  } catch (const Error& e) {
    end += std::string("; close: ") + e.what();
  }
  broken_text_ = "Stream " + std::to_string(streams_.lost()) + " of " +
                 std::to_string(streams_.count()) + " lost after " +
                 std::to_string(records_written_) + " records";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(broken_seconds);
  while (streams_.select_waiting(deadline)) {
    streams_.source().set_timeout(broken_request_ms);
    try {
      if (!rmt::read_request(streams_.input(), limits_, request_))
        streams_.drop_selected();
      else
        answer_broken(request_);
    } catch (const SessionEnd&) {
      streams_.drop_selected();
    } catch (const Error&) {
      streams_.drop_selected();
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
      return reply_ok(*count == 0 ? records_written_ : streams_.lost());
  }
  reply_error(ECONNABORTED, broken_text_);
}

int serve(const ServerOptions& options, int in_fd, int out_fd) {
  Session session(options, in_fd, out_fd);
  session.narrow();
  return session.run();
}

}  // namespace tk::rmt_server
