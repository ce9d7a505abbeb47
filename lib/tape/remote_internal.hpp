// What the parts of the rmt client (remote_*.cpp) share:
// the SIGPIPE guard around writes to a link, the pipeline's windows and the
// reading of an mtget register. Not part of the library's interface.
#pragma once

#include <csignal>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <pthread.h>

namespace tk::detail {

// Writing to a remote shell that died must be an EPIPE error, not a SIGPIPE
// that kills the program: SIGPIPE is blocked for the write and a pending one
// is consumed before it is unblocked (the library must not change the
// program's signal dispositions).
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigset_t pipe_only;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_only, &old_);
  }
  ~SigpipeGuard() {
    if (!was_pending_) {
      sigset_t pipe_only;
      sigemptyset(&pipe_only);
      sigaddset(&pipe_only, SIGPIPE);
      timespec zero{0, 0};
      while (sigtimedwait(&pipe_only, nullptr, &zero) > 0) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t old_{};
  bool was_pending_ = false;
};

// Pipelined rmt: the window starts small and doubles while the link could
// carry more (see write_pipelined), up to the memory a client may hold in
// records not yet known to be on the tape.
inline constexpr std::size_t initial_write_window = std::size_t{2} << 20;
inline constexpr std::size_t max_window = std::size_t{64} << 20;
inline constexpr std::size_t initial_read_window = 4;

// An mtget register (mt_dsreg, mt_gstat, mt_erreg) sent as a number: a
// server whose long has 32 bits sends one with its top bit set as negative.
inline std::int64_t register_bits(std::int64_t value) {
  if (value < 0 && value >= INT32_MIN)
    return static_cast<std::int64_t>(static_cast<std::uint32_t>(value));
  return value;
}

}  // namespace tk::detail
