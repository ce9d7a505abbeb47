#include "open_wait.hpp"

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <utility>
#include <unistd.h>

#include "../error.hpp"
#include "../threads.hpp"
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
// up first; then the thread, alone with it, closes what the open returned.
// The eventfd and the directory are the caller's and its copy's: nothing
// the caller returns to is closed behind its back (buffer takes a snapshot
// of its descriptors before it forks).
struct PendingOpen {
  std::mutex mutex;
  bool abandoned = false;
  bool done = false;
  int fd = -1;
  int errnum = 0;
  int done_event = -1;  // the caller's eventfd, written once done is set
};

constexpr std::chrono::seconds note_every{10};

}  // namespace

Fd open_device_waiting(int dir_fd, const std::string& path, int flags, int timeout_s) {
  if ((flags & O_NONBLOCK) != 0) return open_file_at(dir_fd, path, flags);
  Fd done_event(::eventfd(0, EFD_CLOEXEC));
  if (done_event.get() < 0) throw_errno("eventfd for opening " + path);
  // The thread resolves path against a directory of its own: the caller's
  // may be closed while an abandoned open still waits.
  Fd directory;
  if (dir_fd != AT_FDCWD) {
    directory = Fd(::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0));
    if (directory.get() < 0) throw_errno("open " + path);
  }
  auto pending = std::make_shared<PendingOpen>();
  pending->done_event = done_event.get();
  // Signals stay with the caller's thread: a Ctrl-C while st waits for the
  // drive interrupts the poll below, as it interrupted the open itself.
  std::thread opener = thread_without_signals(
      [pending, dir = std::make_shared<Fd>(std::move(directory)), path, flags] {
        int fd = -1, errnum = 0;
        try {
          fd = open_file_at(dir->get() >= 0 ? dir->get() : AT_FDCWD, path, flags).release();
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
        pending->done = true;
        const std::uint64_t one = 1;
        (void)!::write(pending->done_event, &one, sizeof one);
      });

  // Leaves the open to finish alone; the thread closes what it gets.
  auto give_up = [&] {
    std::lock_guard lock(pending->mutex);
    pending->abandoned = true;
    opener.detach();
  };
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  const auto deadline = started + std::chrono::seconds(timeout_s);
  const bool terminal = ::isatty(STDERR_FILENO) == 1;
  auto next_note = started + note_every;
  for (;;) {
    // A stop taken outside the poll (between its turns, or while the
    // thread was being started) is seen here, not only as its EINTR.
    if (stop_requested()) {
      give_up();
      throw Interrupted("open " + path);
    }
    const auto until = timeout_s > 0 ? std::min(next_note, deadline) : next_note;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    pollfd p{done_event.get(), POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::max<std::int64_t>(0, left.count())));
    if (n == -1) {
      if (errno == EINTR) continue;
      const int errnum = errno;
      give_up();
      throw Error(errnum, "poll while opening " + path);
    }
    if (n > 0) break;
    const auto now = Clock::now();
    if (timeout_s > 0 && now >= deadline) {
      give_up();
      throw Error(ETIMEDOUT, "open " + path + ": the device did not open within " +
                                 std::to_string(timeout_s) +
                                 " s (--open-timeout or TAPEKIT_OPEN_TIMEOUT sets the limit)");
    }
    if (now >= next_note) {
      // After a stop (Ctrl-Z) one line, not one for each 10 s missed.
      next_note = now + note_every;
      if (terminal) {
        const auto waited = std::chrono::duration_cast<std::chrono::seconds>(now - started);
        const std::string line =
            "waiting for " + path + " to open, " + std::to_string(waited.count()) + " s\n";
        (void)!::write(STDERR_FILENO, line.data(), line.size());
      }
    }
  }
  opener.join();
  if (pending->fd < 0) throw Error(pending->errnum, "open " + path);
  return Fd(pending->fd);
}

}  // namespace tk
