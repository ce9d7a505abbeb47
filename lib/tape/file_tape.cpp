// Plain files and streams behind the Tape interface.
#include "file_tape.hpp"

#include <cerrno>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mtio.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tk {

FileTape::FileTape(Fd fd, std::string name, bool owned, bool records)
    : Tape(std::move(name)), fd_(std::move(fd)), owned_(owned), records_(records) {}

FileTape::~FileTape() {
  if (!owned_) fd_.release();
}

std::size_t FileTape::read(std::span<std::byte> buf) {
  return read_record(fd_.get(), buf, name());
}

void FileTape::write(std::span<const std::byte> data) {
  if (records_)
    write_record(fd_.get(), data, name());
  else
    write_all(fd_.get(), data, name());
}

namespace {

// A regular file or a FIFO has no tape ioctls. Anything else (a block
// device, a socket) is asked for real, as mt-st asks it, so that the
// kernel's own answer is reported: a loop device says EINVAL, not ENOTTY.
[[noreturn]] void ask_for_real(int fd, unsigned long request, void* arg, const std::string& context) {
  struct stat st {};
  if (::fstat(fd, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) &&
      retry_eintr([&] { return ::ioctl(fd, request, arg); }) == -1)
    throw_errno(context);
  // Answered (no device but a tape drive should), or not asked.
  throw Error(ENOTTY, context);
}

}  // namespace

void FileTape::op(MtOp op, int count) {
  struct mtop request {};
  request.mt_op = static_cast<short>(op);
  request.mt_count = count;
  ask_for_real(fd_.get(), MTIOCTOP, &request, "tape operation on " + name());
}

TapeStatus FileTape::status() {
  struct mtget g {};
  ask_for_real(fd_.get(), MTIOCGET, &g, "tape status of " + name());
}

std::int64_t FileTape::tell() {
  struct mtpos pos {};
  ask_for_real(fd_.get(), MTIOCPOS, &pos, "tape position of " + name());
}

std::int64_t FileTape::seek(std::int64_t offset, int whence) {
  off_t pos = ::lseek(fd_.get(), static_cast<off_t>(offset), whence);
  if (pos == -1) throw_errno("seek " + name());
  return pos;
}

void FileTape::close() {
  if (!owned_) {
    fd_.release();
    return;
  }
  fd_.close("close " + name());
}

void refuse_linked_write(const struct stat& st, const std::string& path) {
  if (S_ISREG(st.st_mode) && st.st_nlink > 1)
    throw Error(EMLINK, "open " + path + " (a file with " + std::to_string(st.st_nlink) +
                            " hard links is not written: one may lead out of the allowed tree)");
}

std::unique_ptr<Tape> open_file_tape(const std::string& path, int flags,
                                     const OpenOptions& options) {
  // The link count is known only once the file is open: it is truncated
  // after the check, never before.
  const bool check_links = options.single_link_writes && (flags & O_ACCMODE) != O_RDONLY;
  Fd fd = open_file_at(options.dir_fd, path, check_links ? flags & ~O_TRUNC : flags,
                       options.create_mode);
  struct stat st {};
  if (::fstat(fd.get(), &st) == -1) throw_errno("stat " + path);
  if (check_links) {
    refuse_linked_write(st, path);
    if ((flags & O_TRUNC) != 0 && S_ISREG(st.st_mode) && ::ftruncate(fd.get(), 0) == -1)
      throw_errno("truncate " + path);
  }
  return std::make_unique<FileTape>(std::move(fd), path, true, S_ISCHR(st.st_mode));
}

}  // namespace tk
