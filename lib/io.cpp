// System-call wrappers: the only place EINTR and EAGAIN are handled.
#include "io.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <climits>
#include <fcntl.h>
#include <filesystem>
#include <linux/openat2.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include <vector>

namespace tk {
namespace {
// The one piece of mutable global state the library keeps: the signal
// flags of a stop and of its kind.
std::atomic<bool> stop_flag{false};
std::atomic<bool> at_once_flag{false};
static_assert(std::atomic<bool>::is_always_lock_free);
}  // namespace

void request_stop() noexcept { stop_flag.store(true, std::memory_order_relaxed); }
bool stop_requested() noexcept { return stop_flag.load(std::memory_order_relaxed); }
void request_stop_at_once() noexcept {
  at_once_flag.store(true, std::memory_order_relaxed);
  stop_flag.store(true, std::memory_order_relaxed);
}
bool stop_at_once_requested() noexcept {
  return stop_requested() && at_once_flag.load(std::memory_order_relaxed);
}
void clear_stop() noexcept {
  stop_flag.store(false, std::memory_order_relaxed);
  at_once_flag.store(false, std::memory_order_relaxed);
}

void throw_syscall_error(std::string context) {
  if (errno == EINTR) throw Interrupted(std::move(context));
  throw_errno(std::move(context));
}

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

int Fd::release() noexcept {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

void Fd::close(std::string_view context) {
  int fd = release();
  if (fd >= 0 && ::close(fd) == -1 && errno != EINTR) throw_errno(std::string(context));
}

Fd open_file(const std::string& path, int flags, mode_t mode) {
  return open_file_at(AT_FDCWD, path, flags, mode);
}

Fd open_file_at(int dir_fd, const std::string& path, int flags, mode_t mode) {
  int fd = retry_eintr([&] { return ::openat(dir_fd, path.c_str(), flags | O_CLOEXEC, mode); });
  if (fd == -1) throw_syscall_error("open " + path);
  return Fd(fd);
}

namespace {

// openat2(2), which glibc 2.36 does not wrap; -1 with errno ENOSYS where the
// kernel lacks it. EAGAIN (a rename raced a lookup) is retried, as the
// manual advises; the retries are bounded so that a busy tree cannot spin us.
int openat2_fd(int dir_fd, const std::string& path, int flags, mode_t mode,
               std::uint64_t resolve) {
  open_how how{};
  how.flags = static_cast<std::uint64_t>(flags | O_CLOEXEC);
  how.mode = (flags & (O_CREAT | O_TMPFILE)) != 0 ? mode : 0;
  how.resolve = resolve;
  for (int attempt = 0;; ++attempt) {
    long fd = retry_eintr([&] { return ::syscall(SYS_openat2, dir_fd, path.c_str(), &how, sizeof how); });
    if (fd != -1 || errno != EAGAIN || attempt == 100) return static_cast<int>(fd);
  }
}

// The walk for kernels without openat2: every component opened from the one
// before with O_NOFOLLOW, so nothing renamed or linked in the tree can lead
// out of it; a symbolic link anywhere is refused.
Fd walk_beneath(int dir_fd, const std::string& path, int flags, mode_t mode) {
  if (!path.empty() && path.front() == '/') throw Error(EXDEV, "open " + path);
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    std::string part = path.substr(start, slash - start);
    if (part == "..") throw Error(EXDEV, "open " + path);
    if (!part.empty() && part != ".") parts.push_back(std::move(part));
    start = slash + 1;
  }
  if (parts.empty()) parts.emplace_back(".");
  Fd held;
  int at = dir_fd;
  auto fail = [&](const std::string& part) {
    int err = errno;
    struct stat st {};
    // O_NOFOLLOW reports a link as ELOOP or, with O_DIRECTORY, ENOTDIR.
    if (::fstatat(at, part.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
      err = ELOOP;
    errno = err;
    throw_syscall_error("open " + path);
  };
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    int fd = retry_eintr([&] {
      return ::openat(at, parts[i].c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    });
    if (fd == -1) fail(parts[i]);
    held = Fd(fd);
    at = fd;
  }
  int fd = retry_eintr([&] {
    return ::openat(at, parts.back().c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode);
  });
  if (fd == -1) fail(parts.back());
  return Fd(fd);
}

}  // namespace

Fd open_beneath(int dir_fd, const std::string& path, int flags, mode_t mode, Beneath how) {
  if (how == Beneath::automatic) {
    int fd = openat2_fd(dir_fd, path, flags, mode, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
    if (fd != -1) return Fd(fd);
    if (errno != ENOSYS) throw_syscall_error("open " + path);
  }
  return walk_beneath(dir_fd, path, flags, mode);
}

Fd open_no_magic_links(int dir_fd, const std::string& path, int flags, mode_t mode) {
  int fd = openat2_fd(dir_fd, path, flags, mode, RESOLVE_NO_MAGICLINKS);
  if (fd == -1 && errno == ENOSYS) return open_file_at(dir_fd, path, flags, mode);
  if (fd == -1) throw_syscall_error("open " + path);
  return Fd(fd);
}

void wait_ready(int fd, short events, std::string_view name) {
  pollfd pfd{fd, events, 0};
  int n = retry_eintr([&] { return ::poll(&pfd, 1, -1); });
  if (n == -1) throw_syscall_error("poll " + std::string(name));
}

Fd above_stdio(Fd fd) {
  if (!fd.valid() || fd.get() > 2) return fd;
  Fd moved(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 3));
  // Out of descriptors: the low one still works, which beats none at all.
  return moved.valid() ? std::move(moved) : std::move(fd);
}

std::size_t grow_pipe(int fd, std::size_t bytes) noexcept {
  int size = ::fcntl(fd, F_GETPIPE_SZ);
  if (size == -1) return 0;
  if (static_cast<std::size_t>(size) < bytes && bytes <= INT_MAX) {
    int grown = ::fcntl(fd, F_SETPIPE_SZ, static_cast<int>(bytes));
    if (grown != -1) size = grown;
  }
  return static_cast<std::size_t>(size);
}

std::size_t read_record(int fd, std::span<std::byte> buf, std::string_view name) {
  for (;;) {
    ssize_t n = retry_eintr([&] { return ::read(fd, buf.data(), buf.size()); });
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno == EAGAIN) {
      wait_ready(fd, POLLIN, name);
      continue;
    }
    throw_syscall_error("read " + std::string(name));
  }
}

std::size_t read_full(int fd, std::span<std::byte> buf, std::string_view name) {
  std::size_t got = 0;
  while (got < buf.size()) {
    std::size_t n = read_record(fd, buf.subspan(got), name);
    if (n == 0) break;
    got += n;
  }
  return got;
}

void write_all_at(int fd, std::span<const std::byte> data, std::uint64_t offset,
                  std::string_view name) {
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t n = retry_eintr_always([&] {
      return ::pwrite(fd, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
    });
    if (n == -1) throw Error(errno, "write " + std::string(name), done);
    if (n == 0) throw Error(ENOSPC, "write " + std::string(name), done);
    done += static_cast<std::size_t>(n);
  }
}

void write_all(int fd, std::span<const std::byte> data, std::string_view name) {
  // write(2), not writev(2), where there is one part: what a fault injector
  // (libfiu, the tests' shims) wraps.
  write_all(fd, {}, data, name);
}

void write_all(int fd, std::span<const std::byte> head, std::span<const std::byte> body,
               std::string_view name) {
  // A stop asked for while a blocking write has sent part of its bytes (a
  // pipe with less room than the write) makes write(2) return that part,
  // not EINTR: give up then as for EINTR, or the next write blocks again and
  // the stop is never seen. A stop asked for before the call is the caller's
  // to handle (reblock writes out what it read after one).
  const bool stopped_before = stop_requested();
  const std::size_t total = head.size() + body.size();
  std::size_t done = 0;
  while (done < total) {
    if (done > 0 && !stopped_before && stop_requested())
      throw Interrupted("write " + std::string(name), done);
    iovec parts[2];
    int count = 0;
    if (done < head.size())
      parts[count++] = {const_cast<std::byte*>(head.data() + done), head.size() - done};
    const std::size_t into_body = done > head.size() ? done - head.size() : 0;
    if (into_body < body.size())
      parts[count++] = {const_cast<std::byte*>(body.data() + into_body), body.size() - into_body};
    ssize_t n = retry_eintr([&] {
      return count == 1 ? ::write(fd, parts[0].iov_base, parts[0].iov_len) : ::writev(fd, parts, count);
    });
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n == -1 && errno == EAGAIN) {
      wait_ready(fd, POLLOUT, name);
      continue;
    }
    int err = n == 0 ? ENOSPC : errno;
    if (err == EINTR) throw Interrupted("write " + std::string(name), done);
    throw Error(err, "write " + std::string(name), done);
  }
}

void write_record(int fd, std::span<const std::byte> record, std::string_view name) {
  for (;;) {
    ssize_t n = retry_eintr([&] { return ::write(fd, record.data(), record.size()); });
    if (n == static_cast<ssize_t>(record.size())) return;
    if (n == -1 && errno == EAGAIN) {
      wait_ready(fd, POLLOUT, name);
      continue;
    }
    if (n == -1 && errno == EINTR) throw Interrupted("write " + std::string(name));
    // A short write on a tape means the medium is full: st reports early
    // warning that way when it has no errno to give.
    int err = n == -1 ? errno : ENOSPC;
    throw Error(err, "write " + std::string(name), n > 0 ? static_cast<std::size_t>(n) : 0);
  }
}

std::vector<int> open_descriptors() {
  std::vector<int> fds;
  {
    std::error_code error;
    std::filesystem::directory_iterator listing("/proc/self/fd", error);
    // Without /proc (a bare chroot), or when the listing cannot be opened
    // (EMFILE, ENOMEM), every possible descriptor is asked instead: callers
    // compare two lists, and an empty one taken for the truth made buffer's
    // writer close its standard output and error as if they were the input's.
    if (error) {
      rlimit limit{};
      int highest = ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < 65536
                        ? static_cast<int>(limit.rlim_cur)
                        : 65536;
      for (int fd = 0; fd < highest; ++fd)
        if (::fcntl(fd, F_GETFD) != -1) fds.push_back(fd);
      return fds;
    }
    for (const auto& entry : listing) {
      int fd = 0;
      const std::string name = entry.path().filename().string();
      auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), fd);
      if (ec == std::errc() && end == name.data() + name.size()) fds.push_back(fd);
    }
  }
  // The listing's own directory descriptor is among them, closed by now.
  std::erase_if(fds, [](int fd) { return ::fcntl(fd, F_GETFD) == -1; });
  std::sort(fds.begin(), fds.end());
  return fds;
}

void close_copies(const std::vector<int>& fds) noexcept {
  for (int fd : fds) ::close(fd);
}

}  // namespace tk
