// The rmt client's parallel streams: started beside the first connection,
// joined into its session (or left out, with a warning), sized by the round
// trip for --streams auto, and asked what the session did when one of them
// is lost.
#include "remote_streams.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <optional>
#include <unistd.h>
#include <utility>

#include "remote_internal.hpp"

namespace tk {

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

RemoteStreams::RemoteStreams(RemoteLink& link, const OpenOptions& options)
    : link_(link),
      wanted_(std::clamp(options.streams, 0, static_cast<int>(rmt::max_streams))),
      rate_(options.stream_rate),
      warn_(options.warn) {}

void RemoteStreams::start(bool hold_stderr) {
  const int count = wanted_ > 0 ? wanted_ : auto_streams(link_.round_trip(), rate_);
  for (int k = 1; k < count; ++k) {
    try {
      joiners_.push_back(link_.open_stream(hold_stderr));
    } catch (const Error& e) {
      RemoteStream failed;
      failed.failure = e.what();
      joiners_.push_back(std::move(failed));
    }
  }
}

void RemoteStreams::end_joiners() noexcept { end(joiners_); }

void RemoteStreams::end(std::vector<RemoteStream>& joiners) noexcept {
  // None of them has a request of ours to finish: their shells are ended
  // at once (a login still under way would not notice its input ending).
  for (RemoteStream& s : joiners) {
    s.link.to_child = Fd();
    s.link.from_child = Fd();
  }
  for (RemoteStream& s : joiners) {
    if (s.link.process.pid() <= 0) continue;
    try {
      s.link.process.terminate();
    } catch (const Error&) {
    }
  }
  joiners.clear();
}

void RemoteStreams::join(const std::string& action) {
  if (joiners_.empty()) return;
  link_.send(request(), "streams");
  take_reply(action);
}

std::string RemoteStreams::request() const {
  return "i" + std::to_string(rmt::tapekit_streams_op) + "\n" +
         std::to_string(joiners_.size() + 1) + "\n";
}

void RemoteStreams::take_reply(const std::string& action) {
  const std::size_t count = joiners_.size() + 1;
  rmt::Reply r = link_.receive("streams");
  if (!r.ok) return end_joiners();  // a tapekit rmt from before streams: one it is
  if (r.value <= 0 || static_cast<std::uint64_t>(r.value) > rmt::max_join_token)
    link_.lose(action, "bad join token from the server");
  std::string token(static_cast<std::size_t>(r.value), '\0');
  if (link_.reply_in().read_exact(std::as_writable_bytes(std::span(token.data(), token.size()))) <
      token.size())
    link_.lose(action, "connection lost");
  // The shells were started before the open; most have logged in by now.
  for (std::size_t k = 1; k < count; ++k) {
    RemoteStream& s = joiners_[k - 1];
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
  const int connect_timeout = link_.connect_timeout();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(connect_timeout);
  std::vector<bool> stuck(count, false);
  for (std::size_t k = 1; k < count; ++k) {
    RemoteStream& s = joiners_[k - 1];
    if (!s.failure.empty()) continue;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    s.source->set_timeout(connect_timeout > 0 ? static_cast<int>(std::max<std::int64_t>(left.count(), 1)) : -1);
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
      s.failure = stuck[k] ? "no answer within " + std::to_string(connect_timeout) +
                                 " s (--connect-timeout)"
                           : std::string(e.what());
    }
    if (s.source) s.source->set_timeout(-1);
  }
  std::vector<RemoteStream> joined;
  std::int64_t mask = 0;
  std::vector<std::string> warnings;
  for (std::size_t k = 1; k < count; ++k) {
    RemoteStream& s = joiners_[k - 1];
    if (s.failure.empty()) {
      s.show_held_stderr();
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
    s.show_held_stderr();  // the shell's own words on why: a refused key, an unknown host
    std::string how = stuck[k] || status == -1 || status == 0
                          ? ""
                          : "; the " + link_.shell() + " ended with " + describe_wait_status(status);
    warnings.push_back(action + " " + link_.name() + ": stream " + std::to_string(k + 1) + " of " +
                       std::to_string(count) + " could not join (" + s.failure + how + ")");
  }
  joiners_.clear();
  if (!warnings.empty()) {
    // The server keeps the ones we saw join, and lets the others go.
    link_.send("i" + std::to_string(rmt::tapekit_streams_kept_op) + "\n" + std::to_string(mask) + "\n",
               "streams");
    rmt::Reply answer = link_.receive("streams");
    std::int64_t kept = answer.value;
    if (!answer.ok) {
      end(joined);  // a server from before partial sets let them go
      kept = 1;
    }
    if (kept != static_cast<std::int64_t>(joined.size() + 1))
      link_.lose(action, "the server kept " + std::to_string(kept) + " streams of " +
                             std::to_string(joined.size() + 1));
    for (const std::string& w : warnings)
      if (warn_) warn_(w + "; going on with " + std::to_string(kept) +
                       (kept == 1 ? " stream" : " streams"));
  }
  link_.add_streams(std::move(joined));
}

RemoteStreams::AfterLoss RemoteStreams::ask_after_loss(int stream, bool reads_in_flight) {
  const std::size_t n = link_.count();
  // What the server knows, asked on a stream still up after the replies
  // still due there (protocol.hpp: it answers this much after a loss).
  AfterLoss said;
  for (std::size_t s = 0; s < n && !said.written; ++s) {
    RemoteStream& up = link_.stream(s);
    if (static_cast<int>(s) == stream || !up.link.to_child.valid()) continue;
    try {
      up.source->set_timeout(question_timeout_ms);
      for (std::uint64_t q = link_.taken(); q < link_.sent(); ++q) {
        if (q % n != s) continue;
        rmt::Reply r = rmt::read_reply(*up.in);
        if (r.ok && r.value > 0 && reads_in_flight &&
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
      if (count.ok) said.written = count.value;
      if (which.ok) said.lost_by_server = which.value;
    } catch (const Error&) {
      // This one is gone too; the next may answer.
    }
  }
  return said;
}

}  // namespace tk
