// Reading the control stream with timeouts and busy polling.
#include "fd_source.hpp"

#include <algorithm>
#include <cstdint>
#include <cerrno>
#include <optional>
#include <poll.h>
#include <sched.h>

#include "../io.hpp"

namespace tk::rmt {

std::chrono::microseconds default_busy_poll() noexcept {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (::sched_getaffinity(0, sizeof cpus, &cpus) == -1 || CPU_COUNT(&cpus) < 2)
    return std::chrono::microseconds{0};
  return std::chrono::microseconds{50};
}

bool FdSource::watch_for_input(Clock::time_point start) {
  const auto deadline = start + busy_poll_;
  do {
    // A stop requested now must end a server's wait, as it would have
    // interrupted the sleep that watching replaces.
    if ((stop_ends_wait_ && stop_requested()) || stop_at_once_requested())
      throw Interrupted("read " + name_);
    pollfd pfd{fd_, POLLIN, 0};
    int n = ::poll(&pfd, 1, 0);
    if (n > 0) return true;  // data, or the peer hung up: read says which
    if (n == -1 && errno != EINTR) throw_errno("poll " + name_);
    // Watching must not take the CPU from anyone who could use it (the peer
    // itself, or a compressor beside it): without this, one more runnable
    // process made small records half again as slow as sleeping would.
    ::sched_yield();
  } while (Clock::now() < deadline);
  return false;
}

void FdSource::note_wait(Clock::time_point start) noexcept {
  auto waited = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
  waited = std::min(waited, 4 * busy_poll_);
  typical_wait_ = (3 * typical_wait_ + waited) / 4;
}

void FdSource::wait_for_input() {
  using std::chrono::milliseconds;
  std::optional<Clock::time_point> deadline;  // the caller's timeout
  if (timeout_ms_ >= 0) deadline = Clock::now() + milliseconds(timeout_ms_);
  std::optional<Clock::time_point> give_up;   // a client's grace after a stop
  const Clock::time_point started = Clock::now();
  auto next_note = started + wait_note_every_;
  auto ms_until = [](Clock::time_point t) {
    auto left = std::chrono::duration_cast<milliseconds>(t - Clock::now()).count();
    return static_cast<int>(std::clamp<std::int64_t>(left, 0, INT32_MAX));
  };
  for (;;) {
    const bool stopping = stop_requested();
    if (stopping && (stop_ends_wait_ || stop_at_once_requested())) throw Interrupted("read " + name_);
    int wait_ms = deadline ? ms_until(*deadline) : -1;
    if (stopping) {
      if (!give_up) give_up = Clock::now() + stop_grace;
      wait_ms = wait_ms < 0 ? ms_until(*give_up) : std::min(wait_ms, ms_until(*give_up));
    }
    // A signal that lands between the check above and poll() would not
    // interrupt it; looking again every second bounds that to a second.
    if (wait_ms < 0 || wait_ms > 1000) wait_ms = 1000;
    pollfd pfd{fd_, POLLIN, 0};
    int n = ::poll(&pfd, 1, wait_ms);
    if (n > 0) return;
    if (n == -1 && errno != EINTR) throw_errno("poll " + name_);
    if (n == 0 && stopping && give_up && Clock::now() >= *give_up)
      throw Interrupted("read " + name_ + " (no reply within " +
                        std::to_string(stop_grace.count()) + " s of the stop request)");
    if (n == 0 && deadline && Clock::now() >= *deadline) throw Error(ETIMEDOUT, "read " + name_);
    if (n == 0 && wait_note_ && Clock::now() >= next_note) {
      next_note += wait_note_every_;
      wait_note_(std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started));
    }
  }
}

std::size_t FdSource::read_ready(std::span<std::byte> buf) {
  for (;;) {
    // The data is there; a signal now takes nothing from it.
    ssize_t n = retry_eintr_always([&] { return ::read(fd_, buf.data(), buf.size()); });
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno == EAGAIN) {
      wait_for_input();
      continue;
    }
    throw_errno("read " + name_);
  }
}

std::size_t FdSource::read_some(std::span<std::byte> buf) {
  const bool polling = busy_poll_.count() > 0;
  const auto start = polling ? Clock::now() : Clock::time_point{};
  // Every so often watch even when waits have been long: the average counts
  // the wakeups that watching would save, so it may not come down by itself.
  const bool retry = polling && ++reads_since_watch_ >= recheck_every;
  if (polling && (typical_wait_ <= busy_poll_ || retry)) {
    reads_since_watch_ = 0;
    if (watch_for_input(start)) {
      std::size_t n = read_ready(buf);
      note_wait(start);
      return n;
    }
  }
  wait_for_input();
  std::size_t n = read_ready(buf);
  if (polling) note_wait(start);
  return n;
}

}  // namespace tk::rmt
