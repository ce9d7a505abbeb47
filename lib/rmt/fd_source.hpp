// A ByteSource over a descriptor (the control pipe or socket), with an
// optional timeout for each wait so that a silent peer cannot hold a server,
// and optional busy polling so that a streaming peer does not wait for us.
#pragma once

#include <chrono>
#include <functional>

#include "protocol.hpp"

namespace tk::rmt {

// The busy-poll limit a program uses unless told otherwise: a short one
// where it may run on two CPUs or more, none on one (where watching for the
// peer's next request would only keep the peer from running).
std::chrono::microseconds default_busy_poll() noexcept;

class FdSource final : public ByteSource {
 public:
  explicit FdSource(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}
  // Milliseconds to wait for input before read_some throws
  // Error(ETIMEDOUT); negative waits forever.
  void set_timeout(int milliseconds) noexcept { timeout_ms_ = milliseconds; }
  // Before sleeping for input, watch for it for up to `limit` (0: never).
  //
  // Why: the rmt protocol is one request, one reply, so each side sleeps
  // while the other works, and a request costs two wakeups. Waking a task
  // asleep on another CPU is slow, above all on virtual machines (an idle
  // virtual CPU halts, and the host must run it again): on the machines we
  // measured, the wakeups cost more than everything else a 10 KiB record
  // takes. Watching for the next request skips our wakeup while the peer
  // streams. It is only done while input has typically come within the
  // limit (a running average of recent waits, each counted at most as four
  // limits), and once every 64 reads otherwise: a peer that pauses now and
  // then costs a watch or two, and one that answers more slowly than the
  // limit (tar over ssh, where ssh and sshd need the CPU we would burn)
  // one watch in 64. The watch yields the CPU between looks, so it only
  // uses time no other process wants.
  void set_busy_poll(std::chrono::microseconds limit) noexcept { busy_poll_ = limit; }
  // Whether a stop request (request_stop, from a signal) ends a wait for
  // input with Interrupted. A server's wait is for the next request, so yes.
  // A client's is for the reply to a request already sent: giving up would
  // leave the reply in the pipe to be taken for the next one's, so a client
  // keeps waiting, for up to stop_grace after the stop, then gives up; at
  // once when the stop says the peer hung (request_stop_at_once), since
  // that reply is not coming and the session is given up either way.
  void set_stop_ends_wait(bool yes) noexcept { stop_ends_wait_ = yes; }
  // Called with the time waited so far every `every` of one wait for input
  // (a person at a terminal told that a drive is still loading); empty:
  // nothing is called.
  using WaitNote = std::function<void(std::chrono::seconds waited)>;
  void set_wait_note(WaitNote note, std::chrono::seconds every = std::chrono::seconds{10}) {
    wait_note_ = std::move(note);
    wait_note_every_ = every;
  }
  static constexpr std::chrono::seconds stop_grace{10};
  std::size_t read_some(std::span<std::byte> buf) override;

 private:
  using Clock = std::chrono::steady_clock;
  // True when input is ready within the busy-poll limit from `start`.
  bool watch_for_input(Clock::time_point start);
  // Adds the wait that ended now to the running average.
  void note_wait(Clock::time_point start) noexcept;
  // Waits (timeouts, stop requests as above) until a read will not block.
  void wait_for_input();
  // Reads what is there; a signal does not lose it.
  std::size_t read_ready(std::span<std::byte> buf);

  int fd_;
  std::string name_;
  int timeout_ms_ = -1;
  bool stop_ends_wait_ = false;
  WaitNote wait_note_;
  std::chrono::seconds wait_note_every_{10};
  std::chrono::microseconds busy_poll_{0};
  static constexpr int recheck_every = 64;     // reads between watches while waits are long
  std::chrono::microseconds typical_wait_{0};  // running average of waits
  int reads_since_watch_ = 0;
};

}  // namespace tk::rmt
