// The st device backend over the Linux magnetic tape ioctls.
#include "st_tape.hpp"

#include <cerrno>
#include <sys/ioctl.h>
#include <sys/mtio.h>
#include <unistd.h>

namespace tk {

TapeStatus status_from_mtget(const MtGet& g) {
  TapeStatus s;
  auto bits = static_cast<unsigned long>(g.gstat);
  auto dsreg = static_cast<unsigned long>(g.dsreg);
  s.drive_type = g.type;
  s.partition = g.resid;
  s.file_number = g.fileno;
  s.block_number = g.blkno;
  s.block_size = static_cast<std::uint32_t>(dsreg & 0xffffffUL);
  s.density = static_cast<std::uint32_t>((dsreg & 0xff000000UL) >> 24);
  s.soft_errors = g.erreg;
  s.eof = (bits & gmt::eof) != 0;
  s.bot = (bits & gmt::bot) != 0;
  s.eot = (bits & gmt::eot) != 0;
  s.sm = (bits & gmt::sm) != 0;
  s.eod = (bits & gmt::eod) != 0;
  s.write_protected = (bits & gmt::wr_prot) != 0;
  s.online = (bits & gmt::online) != 0;
  s.door_open = (bits & gmt::dr_open) != 0;
  s.immediate_report = (bits & gmt::im_rep_en) != 0;
  s.cleaning_requested = (bits & gmt::cln) != 0;
  s.compression = false;
  s.compression_known = false;
  return s;
}

MtGet mtget_from_status(const TapeStatus& s) {
  MtGet g;
  g.type = s.drive_type;
  g.resid = s.partition;
  g.dsreg = static_cast<long>((static_cast<unsigned long>(s.density & 0xffU) << 24) |
                              (s.block_size & 0xffffffU));
  unsigned long bits = 0;
  if (s.eof) bits |= gmt::eof;
  if (s.bot) bits |= gmt::bot;
  if (s.eot) bits |= gmt::eot;
  if (s.sm) bits |= gmt::sm;
  if (s.eod) bits |= gmt::eod;
  if (s.write_protected) bits |= gmt::wr_prot;
  if (s.online) bits |= gmt::online;
  if (s.density == 3) bits |= gmt::d_6250;
  if (s.density == 2) bits |= gmt::d_1600;
  if (s.density == 1) bits |= gmt::d_800;
  if (s.door_open) bits |= gmt::dr_open;
  if (s.immediate_report) bits |= gmt::im_rep_en;
  if (s.cleaning_requested) bits |= gmt::cln;
  g.gstat = static_cast<long>(bits);
  g.erreg = s.soft_errors;
  g.fileno = static_cast<int>(s.file_number);
  g.blkno = static_cast<int>(s.block_number);
  return g;
}

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

MtGet StTape::raw_status() {
  mtget g{};
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

TapeStatus StTape::status() { return status_from_mtget(raw_status()); }

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

std::unique_ptr<Tape> open_st_tape(const std::string& path, int flags, int dir_fd) {
  return std::make_unique<StTape>(open_file_at(dir_fd, path, flags), path);
}

}  // namespace tk
