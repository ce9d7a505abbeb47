// One rmt session: the Session class, the state a connection's requests
// share, and what its files share. Its members are defined by concern: the
// request loop in server.cpp, each request's handler in handlers.cpp, the
// logs in session_log.cpp. The connections it serves, parallel streams
// included, are its StreamSet's (stream_set.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "../../lib/io.hpp"
#include "../../lib/rmt/protocol.hpp"
#include "../../lib/tape/tape.hpp"
#include "opener.hpp"
#include "policy.hpp"
#include "server.hpp"
#include "session_end.hpp"
#include "stream_set.hpp"

namespace tk::rmt_server {

// After a parallel stream was lost: how long the streams left are answered,
// and how long one request may take to arrive then.
constexpr int broken_seconds = 30;
constexpr int broken_request_ms = 5000;

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

  // i29807: answers with the join token, then gathers the streams.
  void start_streams(std::int64_t count);
  // i29808, the joiner's side: hands this connection to the session, then
  // waits.
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
  // Requests come from, and replies go to, the stream it names.
  StreamSet streams_;
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
  std::uint64_t records_written_ = 0;  // since the open
  std::string broken_text_;            // the E103 reply after a stream's loss

  std::uint64_t bytes_in_ = 0;
  std::uint64_t bytes_out_ = 0;
  std::uint64_t requests_ = 0;
};

}  // namespace tk::rmt_server
