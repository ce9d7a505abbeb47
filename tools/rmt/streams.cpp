// Parallel streams on the session's side (protocol.hpp, i29807 to i29810):
// starting them, gathering the joins, keeping those the client saw, turning
// between them, letting them go, and a joiner handing its connection over.
// The sockets and the handover itself are in join.cpp.
#include "session.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <memory>
#include <poll.h>
#include <utility>

#include "../../lib/io.hpp"
#include "join.hpp"

namespace tk::rmt_server {

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

}  // namespace tk::rmt_server
