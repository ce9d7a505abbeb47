// The image's end: its size, the disk space reserved past it, and the
// system calls that move it.
#include "image_appender.hpp"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/resource.h>
#include <unistd.h>
#include <vector>

#include "../io.hpp"

namespace tk {

FsType file_system_type(int fd) noexcept {
  struct statfs fs {};
  return ::fstatfs(fd, &fs) == -1 ? 0 : fs.f_type;
}

// Memory file systems gain nothing: their pages would be zeroed twice.
bool allocates_blocks(FsType type) noexcept {
  return type != 0 && type != TMPFS_MAGIC && type != RAMFS_MAGIC;
}

// Staging relies on a reservation meaning a later write finds the room.
// ext4 and xfs allocate the blocks themselves; copy-on-write file systems
// (btrfs, ZFS) may still run out when the data is written, where a full
// disk would then fail records already accepted: those write as they go.
bool keeps_reservations(FsType type) noexcept {
  return type == EXT4_SUPER_MAGIC || type == XFS_SUPER_MAGIC;
}

namespace {
std::uint64_t file_size_limit() noexcept {
  rlimit limit{};
  if (::getrlimit(RLIMIT_FSIZE, &limit) == -1 || limit.rlim_cur == RLIM_INFINITY) return 0;
  return limit.rlim_cur;
}

// Writes the total bytes of iov at `at`; returns 0, or the errno that
// stopped it with `written` set to what reached the file. A short write is no
// failure by itself: the call for the rest says what stopped the first
// (ENOSPC, EFBIG at the file size limit), or takes it.
int write_vector(int fd, std::span<const iovec> iov, std::size_t total, off_t at,
                 std::size_t& written) {
  std::vector<iovec> rest;  // what is left after a short write
  std::span<const iovec> left = iov;
  while (written < total) {
    ssize_t n = retry_eintr([&] {
      return ::pwritev(fd, left.data(), static_cast<int>(left.size()),
                       at + static_cast<off_t>(written));
    });
    if (n == -1) return errno;
    if (n == 0) return ENOSPC;
    written += static_cast<std::size_t>(n);
    if (written == total) break;
    auto skip = static_cast<std::size_t>(n);
    std::size_t first = 0;
    while (skip >= left[first].iov_len) skip -= left[first++].iov_len;
    std::vector<iovec> next(left.begin() + static_cast<std::ptrdiff_t>(first), left.end());
    next.front().iov_base = static_cast<char*>(next.front().iov_base) + skip;
    next.front().iov_len -= skip;
    rest = std::move(next);
    left = rest;
  }
  return 0;
}
}  // namespace

ImageEnd::ImageEnd(int fd, std::string name, simh::ImageReader& reader, bool writable,
                   std::uint64_t capacity)
    : fd_(fd),
      name_(std::move(name)),
      reader_(reader),
      size_(reader.size()),
      capacity_(capacity),
      size_limit_(file_size_limit()) {
  const FsType type = file_system_type(fd);
  reserve_ = writable && allocates_blocks(type);
  stage_ = reserve_ && keeps_reservations(type);
}

void ImageEnd::truncate(std::uint64_t at) {
  if (at >= size_) return;
  if (retry_eintr([&] { return ::ftruncate(fd_, static_cast<off_t>(at)); }) == -1)
    throw_syscall_error("truncate " + name_);
  size_ = at;
  reader_.set_size(size_);
  reserved_end_ = 0;  // truncation freed the blocks past the new end
}

void ImageEnd::release() noexcept {
  if (!reserved_) return;
  // Best effort: blocks left reserved past the end cost space, not data.
  if (::ftruncate(fd_, static_cast<off_t>(size_)) == -1) {
  }
  reserved_ = false;
  reserved_end_ = 0;
}

bool ImageEnd::reserve_for(std::size_t total) noexcept {
  if (reserve_ && size_ + total > reserved_end_) reserve_through(size_ + total);
  return stage_ && reserve_ && size_ + total <= reserved_end_;
}

void ImageEnd::reserve_through(std::uint64_t end) noexcept {
  std::uint64_t from = std::max(reserved_end_, size_);
  std::uint64_t to = (end / reserve_step_ + 1) * reserve_step_;
  if (capacity_ != 0) to = std::min(to, capacity_);
  if (size_limit_ != 0) to = std::min(to, size_limit_);
  if (to <= from) return;
  reserved_ = true;  // even a refused fallocate may have reserved part
  if (::fallocate(fd_, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(from),
                  static_cast<off_t>(to - from)) == -1) {
    reserve_ = false;
    return;
  }
  reserved_end_ = to;
  reserve_step_ = std::min(2 * reserve_step_, largest_reserve);
}

void ImageEnd::write_through(std::span<const iovec> iov, std::size_t total,
                             std::size_t done_before) {
  const auto at = static_cast<off_t>(size_);
  std::size_t written = 0;
  if (int err = write_vector(fd_, iov, total, at, written); err != 0) {
    // Keep the image well formed: drop a partly written object.
    if (written > 0) {
      // Should the cut fail too, the write's own error is still the one
      // reported, and the next open finds the object cut short.
      if (::ftruncate(fd_, at) == -1) errno = err;
      reserved_end_ = 0;
    }
    reader_.set_size(size_);
    if (err == EINTR) throw Interrupted("write " + name_);
    throw Error(err, "write " + name_, done_before);
  }
  grow(total);
}

void ImageEnd::grow(std::size_t total) noexcept {
  size_ += total;
  reader_.set_size(size_);
}

bool ImageEnd::cut_back(std::uint64_t at) noexcept {
  bool cut = ::ftruncate(fd_, static_cast<off_t>(at)) == 0;
  reserve_ = false;  // synchronous writes from now on
  stage_ = false;
  reserved_end_ = 0;
  size_ = at;
  reader_.set_size(size_);
  return cut;
}

}  // namespace tk
