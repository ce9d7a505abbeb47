// The rmt client's parallel streams: more remote shells started beside the
// first connection, joined into its session (or left out, with a warning),
// sized by the round trip for --streams auto, and what a session can still
// say when one of them is lost.
#include "remote_tape.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <optional>
#include <unistd.h>
#include <utility>

#include "remote_internal.hpp"

namespace tk {

using detail::max_window;
using detail::SigpipeGuard;

namespace {

// How long a stream still up gets to answer how many records the tape holds
// after another was lost.
constexpr int question_timeout_ms = 10000;

}  // namespace

int auto_streams(std::chrono::nanoseconds round_trip, std::uint64_t rate) {
  double seconds = std::chrono::duration<double>(round_trip).count();
  double bytes = static_cast<double>(rate > 0 ? rate : auto_stream_rate) * seconds;
  double wanted = std::ceil(bytes / static_cast<double>(ssh_channel_window));
  return static_cast<int>(std::clamp(wanted, 1.0, static_cast<double>(max_auto_streams)));
}

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
  // What a failed write left off the tape before the loss is known unwritten.
  Unwritten records = std::exchange(refused_, {});
  if (reading_ && writes_in_flight_.empty()) {
    text += "; " + std::to_string(records_read_) +
            (records_read_ == 1 ? " record was" : " records were") + " read";
  } else if (written) {
    // Records reach the tape in order: those in flight up to the count the
    // server gave are there, the rest are not.
    std::uint64_t on_tape = static_cast<std::uint64_t>(*written);
    std::uint64_t index = records_on_tape_;
    for (std::size_t size : writes_in_flight_)
      if (index++ >= on_tape) records.add(size);
    text += "; " + std::to_string(on_tape) + (on_tape == 1 ? " record is" : " records are") +
            " on the tape";
  } else if (!writes_in_flight_.empty()) {
    // No stream could say: the writes in flight are neither on the tape nor
    // lost as far as anyone knows. They stay counted in flight
    // (writes_in_flight()), so that a caller's own count says the same.
    text += "; at least " + std::to_string(records_on_tape_) + " records are on the tape, up to " +
            std::to_string(writes_in_flight_.size()) + " more may be";
    reads_in_flight_ = 0;
    throw StreamLost(text, records.records, records.bytes);
  }
  writes_in_flight_.clear();
  write_bytes_in_flight_ = 0;
  reads_in_flight_ = 0;
  throw StreamLost(text, records.records, records.bytes);
}

}  // namespace tk
