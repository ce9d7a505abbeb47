// Plain files and streams behind the Tape interface.
#include "file_tape.hpp"

#include <cerrno>
#include <fcntl.h>
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

void FileTape::op(MtOp, int) { throw Error(ENOTTY, "tape operation on " + name()); }

TapeStatus FileTape::status() { throw Error(ENOTTY, "tape status of " + name()); }

std::int64_t FileTape::tell() { throw Error(ENOTTY, "tape position of " + name()); }

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

std::unique_ptr<Tape> open_file_tape(const std::string& path, int flags, mode_t mode,
                                     int dir_fd) {
  Fd fd = open_file_at(dir_fd, path, flags, mode);
  struct stat st {};
  if (::fstat(fd.get(), &st) == -1) throw_errno("stat " + path);
  return std::make_unique<FileTape>(std::move(fd), path, true, S_ISCHR(st.st_mode));
}

}  // namespace tk
