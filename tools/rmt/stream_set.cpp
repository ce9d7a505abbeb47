// The session's streams (protocol.hpp, i29807 to i29810): starting them,
// gathering the joins, keeping those the client saw, turning between them,
// letting them go, serving what is left after a loss, and a joiner handing
// its connection over.
#include "stream_set.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <optional>
#include <poll.h>
#include <utility>

#include "../../lib/io.hpp"
#include "session_end.hpp"

namespace tk::rmt_server {

StreamSet::StreamSet(int in_fd, int out_fd, std::chrono::microseconds busy_poll, LogLine log)
    : busy_poll_(busy_poll),
      log_(std::move(log)),
      source0_(in_fd, "control input"),
      in0_(source0_),
      in0_fd_(in_fd),
      out0_fd_(out_fd),
      source_(&source0_),
      in_(&in0_),
      out_fd_(out_fd) {
  source0_.set_busy_poll(busy_poll);
  source0_.set_stop_ends_wait(true);  // a signal ends the session between requests
}

void StreamSet::select(std::size_t i) {
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

int StreamSet::input_fd(std::size_t i) const {
  return i == 0 ? in0_fd_ : streams_[i - 1].joined.in.get();
}

const std::string& StreamSet::listen(std::int64_t count) {
  if (!streams_.empty() || count < 2 || count > rmt::max_streams)
    throw Refusal{EINVAL, "Invalid number of streams"};
  join_ = std::make_unique<JoinPoint>(static_cast<int>(count));
  return join_->token();
}

void StreamSet::gather() {
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
        log_("join refused: " + refusal);
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
    asked_ = asked;
    note_ = std::to_string(count) + " of " + std::to_string(asked) + " streams joined; " + why;
    return;
  }
  install(std::move(joined));
  note_ = std::to_string(count) + " streams";
}

void StreamSet::install(std::vector<JoinedStream> joined) {
  std::sort(joined.begin(), joined.end(),
            [](const JoinedStream& a, const JoinedStream& b) { return a.index < b.index; });
  streams_.resize(joined.size());
  for (std::size_t i = 0; i < joined.size(); ++i) {
    Stream& s = streams_[i];
    s.source = std::make_unique<rmt::FdSource>(joined[i].in.get(), "stream " + std::to_string(i + 2));
    s.source->set_busy_poll(busy_poll_);
    s.source->set_stop_ends_wait(true);
    s.in = std::make_unique<rmt::BufferedReader>(*s.source);
    s.joined = std::move(joined[i]);
  }
  // The request that installed them was the first connection's; the turns
  // begin after it, with the first connection again.
  turn_ = streams_.size();
}

std::size_t StreamSet::keep(std::int64_t mask) {
  std::vector<JoinedStream> waiting = std::exchange(unsettled_, {});
  if (!streams_.empty() || asked_ == 0 || mask < 0 ||
      mask >= (std::int64_t{1} << asked_) || (mask & 1) != 0)
    throw Refusal{EINVAL, "Invalid set of streams"};
  std::vector<JoinedStream> kept;
  for (JoinedStream& j : waiting)
    if ((mask >> j.index) & 1) kept.push_back(std::move(j));
  // What is not kept is let go with `waiting`.
  if (kept.size() != static_cast<std::size_t>(std::popcount(static_cast<std::uint64_t>(mask))))
    throw Refusal{EINVAL, "A stream named has not joined"};
  const std::size_t count = kept.size() + 1;
  install(std::move(kept));
  note_ = std::to_string(count) + " of " + std::to_string(asked_) + " streams";
  asked_ = 0;
  return count;
}

void StreamSet::take_turn() {
  if (!streams_.empty()) select(turn_);
}

void StreamSet::settle(const rmt::Request& r) {
  if (!unsettled_.empty() &&
      !(r.command == 'i' && rmt::parse_number(r.lines[0]) == rmt::tapekit_streams_kept_op))
    unsettled_.clear();
}

void StreamSet::pass_turn() {
  if (release_) {
    release_ = false;
    let_go();
  } else if (!streams_.empty()) {
    turn_ = (turn_ + 1) % count();
  }
}

void StreamSet::let_go() {
  if (streams_.empty()) return;
  select(0);
  streams_.clear();
  turn_ = 0;
}

void StreamSet::lose_turn() {
  lost_ = turn_ + 1;
  live_.assign(count(), true);
  live_[lost_ - 1] = false;
}

bool StreamSet::select_waiting(std::chrono::steady_clock::time_point deadline) {
  using Clock = std::chrono::steady_clock;
  std::vector<pollfd> fds;
  std::vector<std::size_t> which;
  std::optional<std::size_t> ready;
  for (std::size_t i = 0; i < live_.size() && !ready; ++i) {
    if (!live_[i]) continue;
    select(i);
    if (in_->buffered()) ready = i;
    fds.push_back({input_fd(i), POLLIN, 0});
    which.push_back(i);
  }
  if (fds.empty()) return false;
  if (!ready) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    if (retry_eintr(::poll, fds.data(), static_cast<nfds_t>(fds.size()),
                    static_cast<int>(left.count())) <= 0)
      return false;  // the time is up, or a stop signal
    for (std::size_t k = 0; k < fds.size() && !ready; ++k)
      if (fds[k].revents != 0) ready = which[k];
  }
  selected_ = *ready;
  select(selected_);
  return true;
}

Handover StreamSet::hand_over(std::string_view token) {
  // The client sends nothing more until the join is answered.
  if (in0_.buffered()) throw Refusal{EINVAL, "Requests after a join request"};
  try {
    return rmt_server::hand_over(token, in0_fd_, out0_fd_);
  } catch (const Error& e) {
    note_ = std::string("join refused: ") + e.what();
    log_(note_);
    throw Refusal{EACCES, e.errnum() == EACCES ? "Join refused by the session"
                          : e.errnum() == EINVAL ? "Join refused: malformed token"
                                                 : "Join refused: no such session waiting"};
  }
}

void StreamSet::wait_until_released(const Handover& h) {
  note_ = "joined as stream " + std::to_string(h.index + 1);
  // The session reads and writes this connection now; sshd keeps it open
  // while we live, so we live until the session lets it go.
  wait_for_release(h.link.get());
}

}  // namespace tk::rmt_server
