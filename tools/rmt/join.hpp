// Parallel streams on the server (protocol.hpp, i29807/i29808): the first
// connection's meeting point, and a later connection's handover of its
// standard input and output to it.
//
// The meeting point is a socket in Linux's abstract namespace, named by a
// random id: nothing is created on disk, so nothing is left behind even by a
// killed rmt, and nothing needs a path that an --allow sandbox would have to
// permit. Anyone on the host may connect to such a socket, so both sides
// check the other's uid (SO_PEERCRED), and the first connection takes only
// a joiner that also holds its 128-bit secret (compared in constant time).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../../lib/io.hpp"

namespace tk::rmt_server {

// A stream that joined, as the first connection holds it.
struct JoinedStream {
  int index = 0;  // 1 .. streams - 1
  Fd in;          // the joiner's standard input: requests
  Fd out;         // its standard output: replies
  Fd link;        // the joiner waits until this is closed
};

class JoinPoint {
 public:
  // Listens for streams 1 .. streams - 1; throws Error.
  explicit JoinPoint(int streams);
  // "<id>:<secret>", what the client hands each joiner.
  const std::string& token() const noexcept { return token_; }
  int fd() const noexcept { return listen_.get(); }
  // Takes one waiting connection. A stream that may join is returned; a
  // refused one yields nullopt with `refusal` saying why (empty when the
  // connection went away before it said anything).
  std::optional<JoinedStream> accept_one(std::string& refusal);
  bool complete() const noexcept { return joined_ + 1 == streams_; }
  std::size_t streams() const noexcept { return static_cast<std::size_t>(streams_); }

 private:
  Fd listen_;
  std::string id_;
  std::string secret_;
  std::string token_;
  int streams_;
  int joined_ = 0;
  std::vector<bool> taken_;
};

// The joiner's side. `line` is the join request's argument,
// "<k>:<id>:<secret>". Hands in_fd and out_fd to the session it names and
// returns the link to it (its end means the session is over) and k; throws
// Error(EACCES or ECONNREFUSED) saying why the join did not happen.
struct Handover {
  int index = 0;
  Fd link;
};
Handover hand_over(std::string_view line, int in_fd, int out_fd);

// Waits until the session at the other end of `link` lets the stream go
// (closes the link), or a stop signal came.
void wait_for_release(int link);

}  // namespace tk::rmt_server
