// The connections one rmt session serves: the first, and with parallel
// streams (protocol.hpp, i29807 to i29810) those that joined it. The set
// gathers the joins, says whose turn the next request is, and lets the
// streams go; the session reads each request and sends its reply through
// the stream the set names. The sockets and the handover are in join.cpp.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "../../lib/rmt/fd_source.hpp"
#include "../../lib/rmt/protocol.hpp"
#include "join.hpp"

namespace tk::rmt_server {

// How long the first connection waits for the others to join.
constexpr int gather_seconds = 60;

class StreamSet {
 public:
  // Takes a line for the session log.
  using LogLine = std::function<void(const std::string&)>;

  // in_fd and out_fd are the first connection's requests and replies.
  StreamSet(int in_fd, int out_fd, std::chrono::microseconds busy_poll, LogLine log);
  StreamSet(const StreamSet&) = delete;
  StreamSet& operator=(const StreamSet&) = delete;

  // The stream serving the request at hand: where it comes from, and where
  // its reply goes.
  rmt::FdSource& source() noexcept { return *source_; }
  rmt::BufferedReader& input() noexcept { return *in_; }
  int output() const noexcept { return out_fd_; }

  // Whether streams joined the first connection and take turns with it.
  bool parallel() const noexcept { return !streams_.empty(); }
  // The first connection and the streams joined to it.
  std::size_t count() const noexcept { return streams_.size() + 1; }

  // i29807: listens for count - 1 joins; returns the token the client hands
  // each joiner. Refuses a count out of range, or streams joined already.
  const std::string& listen(std::int64_t count);
  // Takes joins until all came, the client sent something on the first
  // stream (it went on without them) or the time is up.
  void gather();
  // i29810: of the streams that joined when not all did, those the client
  // saw joined (`mask`, bit k for stream k) stay; the others are let go.
  // Returns how many streams serve now.
  std::size_t keep(std::int64_t mask);

  // Makes the stream whose turn it is the one that serves the next request.
  void take_turn();
  // Streams that joined while others did not stay only if the client names
  // them in its very next request, `r`.
  void settle(const rmt::Request& r);
  // The request at hand (C, O) lets the other streams go once answered.
  void release_after_reply() noexcept { release_ = parallel(); }
  // The request at hand was answered: the next stream's turn, unless the
  // others are let go.
  void pass_turn();
  // The other streams are let go: their rmt processes end.
  void let_go();

  // The stream whose turn it was is lost (it ended, or its reply could not
  // go); the others may still be served.
  void lose_turn();
  // The stream lost, from 1; 0: none.
  std::size_t lost() const noexcept { return lost_; }
  // After a loss: makes a remaining stream with a request waiting the one
  // that serves it; false once none remains, `deadline` passed or a stop
  // came.
  bool select_waiting(std::chrono::steady_clock::time_point deadline);
  // The stream select_waiting chose has ended.
  void drop_selected() { live_[selected_] = false; }

  // The joiner's side (i29808): hands this connection to the session that
  // `token` names, or refuses (EACCES, EINVAL) saying why.
  Handover hand_over(std::string_view token);
  // Waits until that session lets this connection go.
  void wait_until_released(const Handover& h);

  // For the session log: how the streams came together, or how this
  // connection joined another; empty without streams.
  const std::string& note() const noexcept { return note_; }

 private:
  // Makes stream i (0: the first connection) the one that serves.
  void select(std::size_t i);
  int input_fd(std::size_t i) const;
  // The streams joined, in the order of their index, served in turn after
  // the first connection from the next request on.
  void install(std::vector<JoinedStream> joined);

  struct Stream {
    JoinedStream joined;
    std::unique_ptr<rmt::FdSource> source;
    std::unique_ptr<rmt::BufferedReader> in;
  };

  std::chrono::microseconds busy_poll_;
  LogLine log_;
  rmt::FdSource source0_;
  rmt::BufferedReader in0_;
  int in0_fd_;
  int out0_fd_;
  rmt::FdSource* source_;
  rmt::BufferedReader* in_;
  int out_fd_;
  // The meeting point while the others join, then streams 1 .. N-1 (by
  // index - 1), served in turn after the first.
  std::unique_ptr<JoinPoint> join_;
  std::vector<Stream> streams_;
  // Joined while others did not: kept by an i29810 that comes next on the
  // first connection, let go by any other request.
  std::vector<JoinedStream> unsettled_;
  std::size_t asked_ = 0;
  std::size_t turn_ = 0;
  bool release_ = false;  // after this request's reply (C, O)
  std::size_t lost_ = 0;  // from 1; 0: none
  // After a loss: which streams still send, and whose request is served.
  std::vector<bool> live_;
  std::size_t selected_ = 0;
  std::string note_;
};

}  // namespace tk::rmt_server
