// The rmt client's link: the remote shells that carry one session (the
// first connection, and the parallel streams joined to it), the requests
// sent and replies taken over them in turn, the probes that tell which
// server answers (version, S framing, tapekit's identify), the open's
// timeouts and the hang-up. What a lost connection costs the session is not
// the link's to say: it hands the loss to its Owner (RemoteTape).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../io.hpp"
#include "../process.hpp"
#include "../rmt/fd_source.hpp"
#include "../rmt/protocol.hpp"
#include "tape.hpp"
#include "tape_status.hpp"

namespace tk {

// "[user@]host:path" split; user may be empty.
struct RemoteName {
  std::string user;
  std::string host;
  std::string path;
};
// Splits a remote name; throws Error(EINVAL) for an empty host or path, a
// newline or NUL in the path, or a user/host with characters a shell sees.
RemoteName parse_remote_name(const std::string& name);

// One remote shell running rmt: the first connection or a parallel stream
// (protocol.hpp, i29807).
struct RemoteStream {
  PipedChild link;
  std::unique_ptr<rmt::FdSource> source;
  std::unique_ptr<rmt::BufferedReader> in;
  std::string failure;  // why it cannot join (a stream not yet joined)
  // A shell started before the first connection stood: its stderr, kept
  // until the session has one (a host down would say so once per shell).
  Fd held_stderr;
  std::uint64_t held_stderr_shown = 0;

  // Copies what the shell wrote to its held stderr since last time.
  void show_held_stderr() noexcept;
};

class RemoteLink {
 public:
  // What the link leaves to the tape it carries: a lost connection or
  // stream ends the session, and what that means for the records in flight
  // is the tape's to say; hanging up also ends the streams still joining.
  class Owner {
   public:
    [[noreturn]] virtual void lose_connection(const std::string& action, const std::string& why,
                                              std::size_t stream) = 0;
    // `stream` -1: the server says which.
    [[noreturn]] virtual void lose_stream(int stream, const std::string& action,
                                          const std::string& why) = 0;
    virtual int hang_up(bool at_once, std::size_t which) noexcept = 0;

   protected:
    ~Owner() = default;
  };
  enum class Version { unknown, v0, v1 };
  // How S goes to a server without v1: with its newline to GNU rmt, which
  // answers only then; alone to any other, with a newline after a wait if
  // no answer comes (a BSD-lineage server answers at once, and would take
  // the newline for a garbage command and end).
  enum class StatusFraming { unknown, line, byte };

  // Runs RSH HOST [-l USER] RMT for the remote name (see RemoteTape) and
  // starts the connect timeout: until rmt's first answer.
  RemoteLink(const std::string& name, const OpenOptions& options, Owner& owner);
  RemoteLink(const RemoteLink&) = delete;
  RemoteLink& operator=(const RemoteLink&) = delete;

  const std::string& name() const noexcept { return name_; }
  const RemoteName& remote() const noexcept { return remote_; }
  const std::string& rmt_command() const noexcept { return rmt_command_; }
  // "remote shell ssh for HOST", for diagnostics.
  const std::string& shell() const noexcept { return shell_; }
  int connect_timeout() const noexcept { return connect_timeout_; }

  // A further remote shell running the same rmt command.
  RemoteStream open_stream(bool hold_stderr = false);
  // Streams that joined the session: request i from now on goes on stream
  // i mod N, and its reply comes back there.
  void add_streams(std::vector<RemoteStream>&& joined);
  std::size_t count() const noexcept { return streams_.size(); }
  RemoteStream& stream(std::size_t k) noexcept { return streams_[k]; }
  // Requests sent and replies taken since the streams joined.
  std::uint64_t sent() const noexcept { return sent_; }
  std::uint64_t taken() const noexcept { return taken_; }
  // The stream the last reply came from, and that reply's data.
  std::size_t last_stream() const noexcept { return (taken_ - 1) % streams_.size(); }
  rmt::BufferedReader& reply_in() noexcept { return *reply_in_; }

  // Sends `requests` requests (for W, the record goes as `payload`, after
  // its header, uncopied); 0: the rest of the last one.
  void send(std::string_view bytes, const std::string& action,
            std::span<const std::byte> payload = {}, std::uint64_t requests = 1);
  rmt::Reply receive(const std::string& action, rmt::ReplyValue value = rmt::ReplyValue::count);
  // Sends a request and returns the A value; throws Error for an E reply.
  std::int64_t transact(std::string_view request, const std::string& action);
  // Whether the next reply can be read without waiting.
  bool reply_ready();
  // Whether everything sent has left the pipes to the shells.
  bool all_sent();
  // The connection (with parallel streams: stream `stream`) is lost.
  [[noreturn]] void lose(const std::string& action, const std::string& why, std::size_t stream = 0);
  // A stop or a loss cut a request or a reply short: nothing more can be
  // asked.
  bool broken() const noexcept { return broken_; }
  void break_off() noexcept { broken_ = true; }
  // Closes every link and reaps the remote shells, which are given 30 s to
  // see the end of their input unless `at_once`; returns the wait status
  // of stream `which`'s (-1 when there was none or it could not be reaped).
  int hang_up(bool at_once = false, std::size_t which = 0) noexcept;
  // After C: the servers see the end of their input.
  void close_requests() noexcept;

  // Ends the connect timeout and starts the open's: rmt has answered.
  void wait_for_the_open();
  // The open was answered.
  void opened();

  Version version() const noexcept { return version_; }
  // O starts the server's op numbering afresh.
  void forget_version() noexcept { version_ = Version::unknown; }
  // A server that will not be probed is taken as speaking v0.
  void assume_v0() noexcept { version_ = Version::v0; }
  StatusFraming status_framing() const noexcept { return status_framing_; }
  // With ask_framing, asks along with the version whether S must be sent
  // with its newline (rmt::line_reader_probe): one round trip for both.
  void probe_version(const std::string& action = "probe", bool ask_framing = false);
  // Whether the server is tapekit's rmt (asked once, v1 servers only).
  bool server_is_tapekit(const std::string& action = "identify");
  std::optional<bool> tapekit() const noexcept { return tapekit_; }
  // Of the identify exchange, less the waits for a CPU.
  std::chrono::nanoseconds round_trip() const noexcept { return round_trip_; }
  // S and its struct mtget, from a server without v1.
  MtGet status_struct();

 private:
  void take_framing_reply(const std::string& action);

  Owner& owner_;
  std::string name_;
  RemoteName remote_;
  std::string rmt_command_;
  std::vector<std::string> argv_;  // the remote shell's command line
  std::string shell_;              // the remote shell and host, for diagnostics
  std::vector<RemoteStream> streams_;  // [0]: the first connection
  std::uint64_t sent_ = 0;
  std::uint64_t taken_ = 0;
  rmt::BufferedReader* reply_in_ = nullptr;  // where the last reply came from
  bool broken_ = false;
  int connect_timeout_ = 0;  // seconds, 0: none
  bool connecting_ = false;  // until rmt's first answer
  int open_timeout_ = 0;     // seconds the device may take to open, 0: none
  bool opening_ = false;     // from then until the open is answered
  Version version_ = Version::unknown;
  StatusFraming status_framing_ = StatusFraming::unknown;
  std::optional<bool> tapekit_;
  // The framing probe is a version probe too: a v1 server that answered
  // it A1 now speaks v1, and dump's rmt then sends S in network order.
  bool framing_probe_answered_v1_ = false;
  std::chrono::nanoseconds round_trip_{};
  // Identify exchanges timed: --streams auto counts by their round trip.
  int identify_samples_ = 1;
};

}  // namespace tk
