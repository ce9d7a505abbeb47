// Descriptors and the system calls on them: RAII ownership, EINTR retried in
// exactly one place, and the two read shapes (one record vs. fill the buffer).
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

#include "error.hpp"

namespace tk {

// Set from a signal handler to make blocking calls give up instead of
// retrying after EINTR. Async-signal-safe.
void request_stop() noexcept;
bool stop_requested() noexcept;
// A stop because the peer was found hung (a watchdog's): also ends a
// client's wait for a reply already due, which an ordinary stop grants a
// grace (rmt::FdSource), since that reply is not coming. Async-signal-safe.
void request_stop_at_once() noexcept;
bool stop_at_once_requested() noexcept;
// Clears both kinds of stop.
void clear_stop() noexcept;

// Thrown when a blocking call was interrupted after request_stop().
class Interrupted : public Error {
 public:
  explicit Interrupted(std::string context, std::size_t bytes_done = 0)
      : Error(EINTR, std::move(context), bytes_done) {}
};

// Calls fn(args...) again while it fails with EINTR, unless a stop was
// requested. Never use it for close(2): a retried close may close a
// descriptor another thread just opened.
template <class Fn, class... Args>
auto retry_eintr(Fn fn, Args... args) -> decltype(fn(args...)) {
  for (;;) {
    auto result = fn(args...);
    if (result != -1 || errno != EINTR || stop_requested()) return result;
  }
}

// Calls fn(args...) again while it fails with EINTR, stop request or not:
// for calls that finish something already promised (a reply to take in, a
// file write of bytes already accepted), which a stop must not cut short.
template <class Fn, class... Args>
auto retry_eintr_always(Fn fn, Args... args) -> decltype(fn(args...)) {
  for (;;) {
    auto result = fn(args...);
    if (result != -1 || errno != EINTR) return result;
  }
}

// Throws Interrupted for EINTR (only reached after request_stop), Error otherwise.
[[noreturn]] void throw_syscall_error(std::string context);

// A move-only owner of a file descriptor; -1 means none. The destructor closes
// quietly; call close() where a failing close must be reported.
class Fd {
 public:
  Fd() noexcept = default;
  explicit Fd(int fd) noexcept : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd();

  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  int release() noexcept;
  // Closes and throws Error(context) if close(2) fails.
  void close(std::string_view context);

 private:
  int fd_ = -1;
};

Fd open_file(const std::string& path, int flags, mode_t mode = 0666);
// The same, with a relative path taken from the directory dir_fd (openat(2)).
Fd open_file_at(int dir_fd, const std::string& path, int flags, mode_t mode = 0666);

// How open_beneath resolves a name: openat2(2) where the kernel has it (5.6
// and later), else one component at a time; walk forces the latter.
enum class Beneath { automatic, walk };

// Opens path, relative to the directory dir_fd, without ever leaving that
// directory, whatever is renamed or linked in it meanwhile: an absolute name
// or a ".." component fails with EXDEV, a magic link (/proc/self/fd/N) with
// ELOOP. With openat2 (RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) a symbolic
// link is followed only while it stays beneath dir_fd (else EXDEV); the walk
// opens each directory with O_NOFOLLOW and refuses every symbolic link
// (ELOOP), the last component included. Add O_NOFOLLOW to flags to refuse a
// link as the last component with openat2 too. Throws Error naming path.
Fd open_beneath(int dir_fd, const std::string& path, int flags, mode_t mode = 0,
                Beneath how = Beneath::automatic);

// Opens path (relative to dir_fd) following symbolic links as open(2) does,
// but refusing magic links (/dev/stdin, /proc/PID/fd/N: ELOOP) where the
// kernel has openat2; elsewhere it is openat(2).
Fd open_no_magic_links(int dir_fd, const std::string& path, int flags, mode_t mode = 0);

// Exactly one read(2): on a tape, one record. Waits (poll) on EAGAIN so a
// non-blocking descriptor left by ssh behaves like a blocking one.
std::size_t read_record(int fd, std::span<std::byte> buf, std::string_view name);

// Reads until buf is full or end of input; returns the bytes read.
std::size_t read_full(int fd, std::span<std::byte> buf, std::string_view name);

// Writes all of data, continuing after short writes and waiting on EAGAIN.
// On failure throws Error with bytes_done() = bytes that were written.
void write_all(int fd, std::span<const std::byte> data, std::string_view name);
// The same for head then body, gathered (writev) so that neither is copied
// to put them side by side; bytes_done() counts from the start of head.
void write_all(int fd, std::span<const std::byte> head, std::span<const std::byte> body,
               std::string_view name);

// Writes all of data at offset of a regular file, retrying EINTR even after
// a stop request: the bytes were already accepted from someone, and a file
// write does not block for long. A failure throws Error with bytes_done().
void write_all_at(int fd, std::span<const std::byte> data, std::uint64_t offset,
                  std::string_view name);

// Exactly one write(2) of a whole record; a short write throws Error with
// bytes_done() set (ENOSPC when the device gave no errno).
void write_record(int fd, std::span<const std::byte> record, std::string_view name);

// Blocks until fd is readable (events = POLLIN) or writable (POLLOUT).
void wait_ready(int fd, short events, std::string_view name);

// fd moved above 2 (a close-on-exec duplicate) if it landed on 0, 1 or 2:
// a descriptor a program opens for itself must not stand in for a closed
// standard one, which the program (or a child it starts) still uses.
Fd above_stdio(Fd fd);

// If fd is a pipe smaller than bytes, tries to enlarge it (F_SETPIPE_SZ);
// returns the pipe's size afterwards, or 0 when fd is not a pipe. A refusal
// (over /proc/sys/fs/pipe-max-size) is not an error: pipes work at any size.
std::size_t grow_pipe(int fd, std::size_t bytes) noexcept;

// The descriptors this process has open, ascending: from /proc/self/fd, or
// where that cannot be listed, by asking each descriptor up to RLIMIT_NOFILE
// (at most 65536).
std::vector<int> open_descriptors();

// In a child after fork: closes its copies of descriptors the parent goes on
// using. A tape device or an image's lock is released only when the last
// copy is closed, so a copy left in the child would keep the parent from
// opening the drive again. Errors are ignored: these are only copies.
void close_copies(const std::vector<int>& fds) noexcept;

}  // namespace tk
