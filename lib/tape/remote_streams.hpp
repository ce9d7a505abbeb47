// The rmt client's parallel streams (protocol.hpp, i29807 to i29810): more
// remote shells started beside the first connection, joined into its
// session over the link (or left out, with a warning), sized by the round
// trip for --streams auto, and what a session can still learn when one of
// them is lost. Once joined, the link sends request i on stream i mod N.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "remote_link.hpp"
#include "tape.hpp"

namespace tk {

// --streams auto: the streams wanted for a round trip and a rate (bytes a
// second; 0: auto_stream_rate), at OpenSSH's channel window per stream and
// round trip, from 1 to max_auto_streams.
int auto_streams(std::chrono::nanoseconds round_trip, std::uint64_t rate);
inline constexpr std::uint64_t ssh_channel_window = std::uint64_t{2} << 20;
inline constexpr std::uint64_t auto_stream_rate = std::uint64_t{256} << 20;
inline constexpr int max_auto_streams = 8;

class RemoteStreams {
 public:
  // options.streams, stream_rate and warn: how many are wanted, and where
  // a stream that cannot join is told.
  RemoteStreams(RemoteLink& link, const OpenOptions& options);
  RemoteStreams(const RemoteStreams&) = delete;
  RemoteStreams& operator=(const RemoteStreams&) = delete;

  // Streams wanted, the first connection included; 0: auto.
  int wanted() const noexcept { return wanted_; }
  // Once the server is known to be tapekit's, before the open: starts the
  // remote shells of the streams wanted (by the identify exchange's round
  // trip for --streams auto), so that their logins overlap the first
  // connection's requests instead of following them.
  void start(bool hold_stderr = false);
  // Whether shells were started that have not joined yet.
  bool joining() const noexcept { return !joiners_.empty(); }
  // After the pipeline was agreed: asks the server for the streams started
  // and has them join. One that cannot is named in a warning and left out;
  // the session goes on with the others. The request and the handling of
  // its reply are apart so that the open can send the request with O.
  void join(const std::string& action);
  std::string request() const;
  void take_reply(const std::string& action);
  // Ends the shells of streams that never joined (or were left out).
  void end_joiners() noexcept;

  // What a stream still up says after another was lost: records written
  // since the open, and the stream the server lost plus one (0: none).
  struct AfterLoss {
    std::optional<std::int64_t> written;
    std::int64_t lost_by_server = 0;
  };
  // Asked on a stream other than `stream` after the replies still due
  // there, whose read data is dropped when `reads_in_flight`.
  AfterLoss ask_after_loss(int stream, bool reads_in_flight);

 private:
  static void end(std::vector<RemoteStream>& joiners) noexcept;

  RemoteLink& link_;
  std::vector<RemoteStream> joiners_;  // started, not joined yet: streams 2 .. N
  int wanted_ = 1;
  std::uint64_t rate_ = 0;
  std::function<void(const std::string&)> warn_;
};

}  // namespace tk
