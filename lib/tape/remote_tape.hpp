// The remote backend: "[user@]host:path" reached through rsh/ssh and an rmt
// server on the far side, speaking the codec of lib/rmt (docs/rmt-protocol.md,
// "The client's rules": bounded replies, symbolic flags, S as one byte but to
// GNU rmt, v1 ops after I-1).
#pragma once

#include <chrono>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../io.hpp"
#include "../process.hpp"
#include "../rmt/fd_source.hpp"
#include "../rmt/protocol.hpp"
#include "tape.hpp"

namespace tk {

// --streams auto: the streams wanted for a round trip and a rate (bytes a
// second; 0: auto_stream_rate), at OpenSSH's channel window per stream and
// round trip, from 1 to max_auto_streams.
int auto_streams(std::chrono::nanoseconds round_trip, std::uint64_t rate);
inline constexpr std::uint64_t ssh_channel_window = std::uint64_t{2} << 20;
inline constexpr std::uint64_t auto_stream_rate = std::uint64_t{256} << 20;
inline constexpr int max_auto_streams = 8;

// "[user@]host:path" split; user may be empty.
struct RemoteName {
  std::string user;
  std::string host;
  std::string path;
};
// Splits a remote name; throws Error(EINVAL) for an empty host or path, a
// newline or NUL in the path, or a user/host with characters a shell sees.
RemoteName parse_remote_name(const std::string& name);

// One connection per open, as GNU clients do: the remote shell starts
// "rmt" on the host, O opens the device, C (at close) ends it, so a server
// that hangs up after C (GNU rmt) costs nothing.
class RemoteTape final : public Tape {
 public:
  // Runs RSH HOST [-l USER] RMT, where RSH is options.rsh_command, else
  // $RSH, else "ssh" (split at blanks, so "ssh -p 2222" works), and RMT is
  // options.rmt_command, else $RMT, else "/etc/rmt"; then opens the path.
  // A path ending in ".tap" is a virtual tape only to tapekit's rmt: unless
  // options.plain_remote, any other server is refused (EMEDIUMTYPE) before
  // the open request that would create the file there. No answer within the
  // connect timeout (see OpenOptions) ends the remote shell (ETIMEDOUT).
  RemoteTape(const std::string& name, int flags, const OpenOptions& options);
  ~RemoteTape() override;

  std::size_t read(std::span<std::byte> buf) override;
  void write(std::span<const std::byte> data) override;
  void op(MtOp op, int count) override;
  TapeStatus status() override;
  std::int64_t tell() override;
  std::int64_t seek(std::int64_t offset, int whence) override;
  void close() override;
  bool keeps_records() const override { return true; }
  void expect_sequential_reads() override { read_ahead_wanted_ = true; }
  // Asked of tapekit's rmt (i29811), which sends its drive the command; any
  // other server is asked nothing: scsi::Refusal::other_server, naming it.
  std::vector<std::uint8_t> health_data(scsi::HealthQuery query) override;

  // Pipelined writes sent whose reply has not come (Tape::unacknowledged).
  std::size_t writes_in_flight() const noexcept { return writes_in_flight_.size(); }
  std::uint64_t bytes_in_flight() const noexcept { return write_bytes_in_flight_; }
  Unacknowledged unacknowledged() const noexcept override {
    return {write_bytes_in_flight_, writes_in_flight_.size()};
  }
  bool settle_before_close() noexcept override;
  void settle_writes(std::size_t leave = 0) override {
    if (!open_ || broken_) return;
    while (writes_in_flight_.size() > leave) take_write_reply();
  }
  LinkLoss link_loss() const override {
    return {lost_reason_, unconfirmed_.records, unconfirmed_.bytes, unconfirmed_.bytes_there};
  }

 private:
  enum class Version { unknown, v0, v1 };
  // Writes that did not reach the tape (UnwrittenRecords): how many, and
  // their bytes not on it (the first may be there in part).
  struct Unwritten {
    std::uint64_t records = 0;
    std::uint64_t bytes = 0;
    void add(std::uint64_t lost) {
      if (lost == 0) return;
      ++records;
      bytes += lost;
    }
  };
  // The writes sent whole that the server never answered before the
  // connection was lost (LinkLoss).
  struct Unconfirmed {
    std::uint64_t records = 0;
    std::uint64_t bytes = 0;
    std::optional<std::uint64_t> bytes_there;
  };
  // A W request's record goes as `payload`, after its header, uncopied.
  void send(std::string_view bytes, const std::string& action,
            std::span<const std::byte> payload = {});
  rmt::Reply receive(const std::string& action, rmt::ReplyValue value = rmt::ReplyValue::count);
  // Sends a request and returns the A value; throws Error for an E reply.
  std::int64_t transact(std::string_view request, const std::string& action);
  // With ask_framing, asks along with the version whether S must be sent
  // with its newline (rmt::line_reader_probe): one round trip for both.
  void probe_version(const std::string& action = "probe", bool ask_framing = false);
  void take_framing_reply(const std::string& action);
  // S and its struct mtget, from a server without v1.
  TapeStatus status_from_struct();
  // Whether the server is tapekit's rmt (asked once, v1 servers only).
  bool server_is_tapekit(const std::string& action = "identify");
  // The connection (with parallel streams: stream `stream`) is lost.
  [[noreturn]] void lose_connection(const std::string& action, const std::string& why,
                                    std::size_t stream = 0);
  // When the one connection is lost with writes in flight: takes the answers
  // the server still sends and returns the records it refused or cancelled,
  // which did not reach the tape. Those sent whole and never answered stay
  // in flight, counted in unconfirmed_.
  Unwritten settle_writes_on_loss() noexcept;
  // Once the shells are gone: how many bytes the file holds, asked through
  // a new connection, when that says which unconfirmed writes arrived (a
  // plain file the open truncated; a device or a virtual tape says nothing).
  std::optional<std::uint64_t> read_back_size() const noexcept;
  // Moves the unconfirmed writes, by the read-back, to the tape or to
  // `records`; leaves them in flight when there is none or it cannot be right.
  void resolve_unconfirmed(Unwritten& records);
  // Closes every link and reaps the remote shells, which are given 30 s to
  // see the end of their input unless `at_once`; returns the wait status
  // of stream `which`'s (-1 when there was none or it could not be reaped).
  int hang_up(bool at_once = false, std::size_t which = 0) noexcept;

  // Parallel streams (protocol.hpp, i29807): one more remote shell running
  // the same rmt command.
  struct Stream {
    PipedChild link;
    std::unique_ptr<rmt::FdSource> source;
    std::unique_ptr<rmt::BufferedReader> in;
    std::string failure;  // why it cannot join (a stream not yet joined)
    // A shell started before the first connection stood: its stderr, kept
    // until the session has one (a host down would say so once per shell).
    Fd held_stderr;
    std::uint64_t held_stderr_shown = 0;
  };
  Stream open_stream(bool hold_stderr = false);
  // Copies what a stream's shell wrote to its held stderr since last time.
  static void show_held_stderr(Stream& s) noexcept;
  // Once the server is known to be tapekit's, before the open: starts the
  // remote shells of the streams wanted (by the identify exchange's round
  // trip for --streams auto), so that their logins overlap the first
  // connection's requests instead of following them.
  void start_streams(bool hold_stderr = false);
  // After the pipeline was agreed: asks the server for the streams started
  // and has them join. One that cannot is named in a warning and left out;
  // the session goes on with the others. The request and the handling of
  // its reply are apart so that open() can send the request with O.
  void join_streams(const std::string& action);
  std::string streams_request() const;
  void take_streams_reply(const std::string& action);
  // Ends the shells of streams that never joined (or were left out).
  void end_joiners(std::vector<Stream>& joiners) noexcept;
  // A stream of a joined session ended (`stream`; -1: the server says which):
  // asks a stream still up how many records the tape holds, hangs up and
  // throws StreamLost.
  [[noreturn]] void lose_stream(int stream, const std::string& action, const std::string& why);
  Stream& sending() { return streams_[sent_ % streams_.size()]; }
  Stream& receiving() { return streams_[taken_ % streams_.size()]; }

  // Pipelined rmt with tapekit's rmt (protocol.hpp): asked once, at the
  // first read or write, so that nothing else a session does changes; or
  // with O, when the open already says the session will pipeline.
  void agree_pipeline(const std::string& action);
  // C, with the links closed behind it; throws when the close failed.
  void send_close();
  static std::string pipeline_request();
  void take_pipeline_reply(const std::string& action);
  // O, and with it the pipeline and the streams when the session is known
  // to want them: one round trip for what took three.
  void open_request(const std::string& request, bool agree_now);
  // Ends the connect timeout and starts the open's: rmt has answered.
  void wait_for_the_open();
  void acknowledge_stop();
  // Whether a reply can be read without waiting.
  bool reply_ready();
  void write_pipelined(std::span<const std::byte> data);
  // Takes the reply to the oldest write in flight; a failure there throws
  // UnwrittenRecords after the replies to all later ones.
  void take_write_reply();
  [[noreturn]] void fail_pipelined_writes(const rmt::Reply& failed);
  std::size_t read_ahead(std::span<std::byte> buf);
  // Takes the reply to the oldest read in flight into buf.
  std::size_t take_read_reply(std::span<std::byte> buf);
  // Before any other request: the replies to the writes in flight are
  // taken, and records read ahead that the caller did not take are given
  // back (the tape spaces back over them).
  void settle(const std::string& action);
  void settle_reads(const std::string& action);
  void step_back(std::uint64_t records, std::uint64_t bytes, bool passed_end);

  std::vector<std::string> argv_;  // the remote shell's command line
  std::string host_;
  std::vector<Stream> streams_;    // [0]: the first connection
  std::vector<Stream> joiners_;    // started, not joined yet: streams 2 .. N
  std::chrono::nanoseconds round_trip_{};  // of the identify exchange
  std::function<void(const std::string&)> warn_;
  // Requests sent and replies taken since the streams joined: request i
  // goes on stream i mod N, and its reply comes back there.
  std::uint64_t sent_ = 0;
  std::uint64_t taken_ = 0;
  rmt::BufferedReader* reply_in_ = nullptr;  // where the last reply came from
  int streams_wanted_ = 1;                   // 0: auto
  std::uint64_t stream_rate_ = 0;
  std::uint64_t records_on_tape_ = 0;  // writes answered since the open
  std::uint64_t bytes_on_tape_ = 0;    // and their bytes
  Unconfirmed unconfirmed_;
  std::string lost_reason_;
  OpenOptions options_;  // the open's, for a read-back
  int flags_ = 0;        // the open's
  std::uint64_t records_read_ = 0;     // records handed to the caller since the open
  bool reading_ = false;               // the last record asked for was a read
  std::string shell_;  // the remote shell and host, for diagnostics
  int connect_timeout_ = 0;  // seconds, 0: none
  bool connecting_ = false;  // until rmt's first answer
  int open_timeout_ = 0;     // seconds the device may take to open, 0: none
  bool opening_ = false;     // from then until the open is answered
  std::string request_;  // reused request buffer
  Version version_ = Version::unknown;
  // How S goes to a server without v1: with its newline to GNU rmt, which
  // answers only then; alone to any other, with a newline after
  // s_reply_wait_ms if no answer comes (a BSD-lineage server answers at
  // once, and would take the newline for a garbage command and end).
  enum class StatusFraming { unknown, line, byte };
  StatusFraming status_framing_ = StatusFraming::unknown;
  std::optional<bool> tapekit_;
  // The framing probe is a version probe too: a v1 server that answered
  // it A1 now speaks v1, and dump's rmt then sends S in network order.
  bool framing_probe_answered_v1_ = false;
  bool open_ = false;
  bool broken_ = false;
  std::exception_ptr settle_failure_;  // settle_before_close()'s, for close()

  bool pipeline_asked_ = false;
  bool pipelined_writes_ = true;  // OpenOptions::pipelined_writes
  bool pipelined_ = false;
  // The server cancels reads or writes until acknowledged (a read ended, a
  // write failed).
  bool server_stopped_ = false;
  // Writes in flight: each record's size, until its reply says it is on
  // the tape. The records themselves are the caller's (UnwrittenRecords):
  // nothing is copied to send them or kept.
  std::deque<std::size_t> writes_in_flight_;
  // Records a failed write left off the tape (its unwritten part, and the
  // writes the server cancelled after it), gathered while the replies after
  // the failure are taken. Whatever ends that (the UnwrittenRecords it
  // throws, or a connection lost on the way) reports them first.
  Unwritten refused_;
  std::size_t write_bytes_in_flight_ = 0;
  std::size_t write_window_;  // bytes, grows up to max_window
  // Read-ahead.
  bool read_ahead_wanted_ = false;
  bool reads_ended_ = false;  // a read in flight returned 0 or failed
  std::size_t reads_in_flight_ = 0;
  std::size_t read_size_ = 0;
  std::size_t last_record_ = 0;  // bytes in the last record read ahead
  std::size_t read_window_;  // requests
};

}  // namespace tk
