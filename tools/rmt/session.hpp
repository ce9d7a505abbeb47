// One rmt session: the Session class, the state a connection's requests
// share, and what its files share. Its members are defined by concern: the
// request loop in server.cpp, each request's handler in handlers.cpp, the
// parallel streams in streams.cpp, the logs in session_log.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../../lib/io.hpp"
#include "../../lib/rmt/fd_source.hpp"
#include "../../lib/rmt/protocol.hpp"
#include "../../lib/tape/tape.hpp"
#include "join.hpp"
#include "opener.hpp"
#include "policy.hpp"
#include "server.hpp"

namespace tk::rmt_server {

// Parallel streams: how long the first connection waits for the others to
// join, how long it answers the streams left after one was lost, and how
// long one request may take to arrive then.
constexpr int gather_seconds = 60;
constexpr int broken_seconds = 30;
constexpr int broken_request_ms = 5000;

// Ends the session: the control stream cannot be trusted any more.
struct SessionEnd {
  Exit status;
  std::string reason;
};

// A request refused before it reached the tape: errno plus reply text.
struct Refusal {
  int errnum;
  const char* text;
};

// Helpers for the session's logs (session_log.cpp), used at construction,
// by the request loop and by the open handler.
std::string describe_peer(int fd);
Fd open_log(const char* option, const std::string& path);
std::string quoted(std::string_view s);
std::string describe_request(const rmt::Request& r);
std::string syslog_problem();

class Session {
 public:
  Session(const ServerOptions& options, int in_fd, int out_fd);

  // Under --allow, leaves the process nothing but the allowed trees.
  void narrow();

  int run();

 private:
  void serve_requests();
  void handle(const rmt::Request& r);
  void open(const rmt::Request& r);
  void close_tape();
  void read(const rmt::Request& r);
  void write(const rmt::Request& r);
  void seek(const rmt::Request& r);
  void ioctl(const rmt::Request& r, bool extended);
  void status();
  void status_field(char sub);
  // i29811: one drive-health query of the open device (protocol.hpp).
  void health(std::int64_t query);

  // Parallel streams (protocol.hpp, i29807 to i29810).
  std::size_t stream_count() const noexcept { return streams_.size() + 1; }
  // Makes source_, in_ and out_fd_ stream i's (0: the first connection).
  void select_stream(std::size_t i);
  int stream_input(std::size_t i) const;
  void start_streams(std::int64_t count);
  // Takes joins until all came, the client sent something on the first
  // stream (it went on without them) or the time is up.
  void gather();
  // The streams joined, in the order of their index, served in turn after
  // the first connection from the next request on.
  void install_streams(std::vector<JoinedStream> joined);
  // i29810: of the streams that joined when not all did, those the client
  // saw joined (`mask`, bit k for stream k) stay; the others are let go.
  void keep_streams(std::int64_t mask);
  // The other streams are let go: their rmt processes end.
  void end_streams();
  // The joiner's side: hands this connection to the session, then waits.
  void join(const rmt::Request& r);
  // After a stream of a joined session was lost: the tape is closed, what
  // the other streams still send is answered until they end.
  void serve_broken(std::string& end);
  void answer_broken(const rmt::Request& r);
  void log_line(const std::string& text);
  // A line for the session log and for the client's user, written once
  // where the log is standard error.
  void log_and_tell(const std::string& text);
  // After the session's first read found end of data: why the client
  // reads nothing there (tar: "does not look like a tar archive").
  void explain_first_read(Tape& t, const TapeStatus& before);

  Tape& tape();
  // Sees that the `done` bytes a W just wrote are in the image before the
  // reply acknowledges them (rmt.8, "Acknowledged writes"); returns how
  // many are, or throws when none is.
  std::size_t settle_write(std::size_t done);
  // The W record, read in place; ends the session if it does not arrive.
  std::span<const std::byte> receive_payload(std::size_t size);
  void drain_payload(std::uint64_t n);
  [[noreturn]] void premature_eof();
  void send(std::string_view bytes);
  void reply_ok(std::uint64_t value);
  void reply_ok_signed(std::int64_t value);  // a status field, which may be -1
  void reply_error(int errnum, std::string_view text);
  void debug(std::string_view line);
  void log_session(const std::string& end);
  // Adds to the log's list of opens, which stays bounded however many O
  // requests a session makes.
  void note_open(const std::string& text, bool new_entry = true);
  // One line on standard error, which a remote shell takes to the client's
  // user (not when it is the reply channel itself).
  void tell_user(const std::string& text);
  void open_noted(const rmt::Request& r);  // open() after the name is noted
  std::byte* record_buffer(std::size_t size);

  const ServerOptions& options_;
  PathPolicy policy_;
  rmt::Limits limits_;
  // The first connection; with parallel streams, source_, in_ and out_fd_
  // are the stream whose turn it is.
  rmt::FdSource source0_;
  rmt::BufferedReader in0_;
  int in0_fd_;
  int out0_fd_;
  rmt::FdSource* source_;
  rmt::BufferedReader* in_;
  int out_fd_;
  OwnStdio own_stdio_;
  std::string peer_;
  Fd debug_;
  Fd log_;
  bool syslog_missing_ = false;  // --log syslog without a syslog to take it
  std::string user_;
  std::string sandbox_;

  std::unique_ptr<Tape> tape_;
  Fd tape_dir_;  // under --allow: the directory the tape was opened from
  int tape_flags_ = 0;
  bool holds_writes_ = false;  // OpenedTape::holds_writes: a virtual tape
  std::string device_;         // the tape's name as the client asked for it
  bool v1_ = false;
  // The client asked i29803 (tapekit's client does before opening a .tap):
  // it wants virtual tapes only, never a foreign .tap as a plain file.
  bool client_is_tapekit_ = false;
  bool first_read_done_ = false;  // this session's first R was answered
  // Pipelined rmt (protocol.hpp): agreed for this open, and whether a
  // failed W or an R that ended (0 or error) cancels what follows it until
  // the client acknowledges.
  bool pipelined_ = false;
  bool writes_stopped_ = false;
  bool reads_stopped_ = false;
  std::uint64_t cancelled_ = 0;
  rmt::Request request_;
  std::string reply_;
  // Room for a reply header in front of the record, so that an R reply
  // leaves in one write(2) without copying the data.
  static constexpr std::size_t header_room = 32;
  std::unique_ptr<std::byte[]> record_;
  std::size_t record_capacity_ = 0;

  std::string opened_;  // "path flags; path flags" for the log
  // Parallel streams: the meeting point while the others join, then
  // streams 1 .. N-1 (by index - 1), served in turn after the first.
  struct Stream {
    JoinedStream joined;
    std::unique_ptr<rmt::FdSource> source;
    std::unique_ptr<rmt::BufferedReader> in;
  };
  std::unique_ptr<JoinPoint> join_;
  std::vector<Stream> streams_;
  // Joined while others did not: kept by an i29810 that comes next on the
  // first connection, let go by any other request.
  std::vector<JoinedStream> unsettled_;
  std::size_t asked_streams_ = 0;
  std::size_t turn_ = 0;
  bool release_streams_ = false;  // after this request's reply (C, O)
  std::uint64_t records_written_ = 0;  // since the open
  std::size_t lost_stream_ = 0;        // from 1; 0: none
  std::string broken_text_;            // the E103 reply after a loss
  std::string streams_note_;           // for the log

  std::uint64_t bytes_in_ = 0;
  std::uint64_t bytes_out_ = 0;
  std::uint64_t requests_ = 0;
};

}  // namespace tk::rmt_server
