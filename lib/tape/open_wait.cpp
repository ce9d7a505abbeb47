#include "open_wait.hpp"

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <csignal>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <utility>
#include <unistd.h>

#include "../error.hpp"
#include "tape.hpp"

namespace tk {

int timeout_seconds(int option, const char* variable, int fallback) {
  if (option >= 0) return std::min(option, max_connect_timeout);
  const char* v = ::secure_getenv(variable);
  if (v == nullptr || *v == '\0') return fallback;
  std::string_view text(v);
  int seconds = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec != std::errc() || end != text.data() + text.size() || seconds < 0 ||
      seconds > max_connect_timeout)
    throw Error(EINVAL, std::string(variable) + "='" + std::string(text) +
                            "': not a number of seconds from 0 to " +
                            std::to_string(max_connect_timeout));
  return seconds;
}

namespace {

// What the opening thread and the waiting caller share. The caller may give
// up first; then the thread, alone with it, closes the descriptor.
struct PendingOpen {
  std::mutex mutex;
  bool abandoned = false;
  int fd = -1;
  int errnum = 0;
  Fd done;  // an eventfd the thread signals once fd or errnum is set
};

constexpr std::chrono::seconds note_every{10};

}  // namespace

Fd open_device_waiting(int dir_fd, const std::string& path, int flags, int timeout_s) {
  if ((flags & O_NONBLOCK) != 0) return open_file_at(dir_fd, path, flags);
  auto pending = std::make_shared<PendingOpen>();
  pending->done = Fd(::eventfd(0, EFD_CLOEXEC));
  if (pending->done.get() < 0) throw_errno("eventfd for opening " + path);
  {
    // Signals stay with the caller's thread: a Ctrl-C while st waits for the
    // drive interrupts the wait below, as it interrupted the open itself.
    sigset_t all, old;
    ::sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &old);
    std::thread([pending, dir_fd, path, flags] {
      int fd = -1, errnum = 0;
      try {
        fd = open_file_at(dir_fd, path, flags).release();
      } catch (const Error& e) {
        errnum = e.errnum();
      }
      std::lock_guard lock(pending->mutex);
      if (pending->abandoned) {
        if (fd >= 0) ::close(fd);
        return;
      }
      pending->fd = fd;
      pending->errnum = errnum;
      const std::uint64_t one = 1;
      (void)!::write(pending->done.get(), &one, sizeof one);
    }).detach();
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }

  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  const auto deadline = started + std::chrono::seconds(timeout_s);
  const bool terminal = ::isatty(STDERR_FILENO) == 1;
  auto next_note = started + note_every;
  auto give_up = [&](Error e) -> Error {
    std::lock_guard lock(pending->mutex);
    if (pending->fd >= 0) ::close(pending->fd);
    pending->fd = -1;
    pending->abandoned = true;
    return e;
  };
  for (;;) {
    const auto until = timeout_s > 0 ? std::min(next_note, deadline) : next_note;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    pollfd p{pending->done.get(), POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::max<std::int64_t>(0, left.count())));
    if (n == -1) {
      if (errno != EINTR) throw give_up(Error(errno, "poll while opening " + path));
      if (stop_requested()) throw give_up(Interrupted("open " + path));
      continue;
    }
    if (n > 0) break;
    const auto now = Clock::now();
    if (timeout_s > 0 && now >= deadline)
      throw give_up(Error(ETIMEDOUT, "open " + path + ": the device did not open within " +
                                         std::to_string(timeout_s) +
                                         " s (--open-timeout or TAPEKIT_OPEN_TIMEOUT sets the limit)"));
    if (now >= next_note) {
      next_note += note_every;
      if (terminal) {
        const auto waited = std::chrono::duration_cast<std::chrono::seconds>(now - started);
        const std::string line =
            "waiting for " + path + " to open, " + std::to_string(waited.count()) + " s\n";
        (void)!::write(STDERR_FILENO, line.data(), line.size());
      }
    }
  }
  std::lock_guard lock(pending->mutex);
  if (pending->fd < 0) throw Error(pending->errnum, "open " + path);
  return Fd(std::exchange(pending->fd, -1));
}

}  // namespace tk
