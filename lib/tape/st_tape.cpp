// The st device backend over the Linux magnetic tape ioctls.
#include "st_tape.hpp"

#include <cerrno>
#include <sys/ioctl.h>
#include <sys/mtio.h>
#include <unistd.h>

#include "../scsi/sg_io.hpp"
#include "open_wait.hpp"

namespace tk {

StTape::StTape(Fd fd, std::string name) : Tape(std::move(name)), fd_(std::move(fd)) {}

std::size_t StTape::read(std::span<std::byte> buf) { return read_record(fd_.get(), buf, name()); }

void StTape::write(std::span<const std::byte> data) { write_record(fd_.get(), data, name()); }

void StTape::op(MtOp op, int count) {
  mtop request{};
  request.mt_op = static_cast<short>(op);
  request.mt_count = count;
  // Not retried after EINTR: a spacing or write-filemark operation that was
  // partly done would be repeated. The st driver reports EINTR only while an
  // earlier immediate-mode command is still running, as a failure.
  if (::ioctl(fd_.get(), MTIOCTOP, &request) == -1) throw_syscall_error("ioctl " + name());
}

MtGet StTape::read_mtget() {
  struct mtget g {};
  if (retry_eintr([&] { return ::ioctl(fd_.get(), MTIOCGET, &g); }) == -1)
    throw_syscall_error("ioctl " + name());
  MtGet out;
  out.type = g.mt_type;
  out.resid = g.mt_resid;
  out.dsreg = g.mt_dsreg;
  out.gstat = g.mt_gstat;
  out.erreg = g.mt_erreg;
  out.fileno = g.mt_fileno;
  out.blkno = g.mt_blkno;
  return out;
}

TapeStatus StTape::status() { return status_from_mtget(read_mtget()); }

StatusReport StTape::status_report() {
  MtGet raw = read_mtget();
  return {raw, status_from_mtget(raw)};
}

std::int64_t StTape::tell() {
  mtpos pos{};
  if (retry_eintr([&] { return ::ioctl(fd_.get(), MTIOCPOS, &pos); }) == -1)
    throw_syscall_error("ioctl " + name());
  return pos.mt_blkno;
}

std::int64_t StTape::seek(std::int64_t offset, int whence) {
  off_t pos = ::lseek(fd_.get(), static_cast<off_t>(offset), whence);
  if (pos == -1) throw_errno("seek " + name());
  return pos;
}

// The driver itself writes the filemark after a write when the device closes.
void StTape::close() { fd_.close("close " + name()); }

std::vector<std::uint8_t> StTape::health_data(scsi::HealthQuery query) {
  return scsi::ScsiDevice(fd_.get(), name()).run_whole(query);
}

std::unique_ptr<Tape> open_st_tape(const std::string& path, int flags, int dir_fd, int timeout_s) {
  return std::make_unique<StTape>(open_device_waiting(dir_fd, path, flags, timeout_s), path);
}

}  // namespace tk
