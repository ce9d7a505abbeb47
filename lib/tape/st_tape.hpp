// The st device backend: a Linux SCSI tape character device (/dev/nst0)
// driven with MTIOCTOP / MTIOCGET / MTIOCPOS, exactly as mt-st drives it.
#pragma once

#include <cstdint>
#include <fcntl.h>
#include <memory>
#include <string>
#include <sys/types.h>

#include "../io.hpp"
#include "tape.hpp"

namespace tk {

// struct mtget as the driver fills it (x86-64 widths), kept verbatim so that
// status output can reproduce every bit the driver reported.
struct MtGet {
  long type = 0;    // mt_type: 0x72 SCSI-2, 0x71 SCSI-1, ...
  long resid = 0;   // st: the current partition
  long dsreg = 0;   // (density << 24) | block size
  long gstat = 0;   // GMT_* bits
  long erreg = 0;   // st: soft error count in the low 16 bits
  int fileno = -1;
  int blkno = -1;
};

// GMT_* bits of mt_gstat (<sys/mtio.h>), in mt-st's print order.
namespace gmt {
inline constexpr unsigned long eof = 0x80000000UL;
inline constexpr unsigned long bot = 0x40000000UL;
inline constexpr unsigned long eot = 0x20000000UL;
inline constexpr unsigned long sm = 0x10000000UL;
inline constexpr unsigned long eod = 0x08000000UL;
inline constexpr unsigned long wr_prot = 0x04000000UL;
inline constexpr unsigned long online = 0x01000000UL;
inline constexpr unsigned long d_6250 = 0x00800000UL;
inline constexpr unsigned long d_1600 = 0x00400000UL;
inline constexpr unsigned long d_800 = 0x00200000UL;
inline constexpr unsigned long dr_open = 0x00040000UL;
inline constexpr unsigned long im_rep_en = 0x00010000UL;
inline constexpr unsigned long cln = 0x00008000UL;
}  // namespace gmt

// The portable view of an mtget (compression is unknown: MTIOCGET has no bit).
TapeStatus status_from_mtget(const MtGet& g);
// The mtget a real st drive would report for this status; D_6250/D_1600/D_800
// follow density codes 3/2/1 as the st driver sets them.
MtGet mtget_from_status(const TapeStatus& s);

class StTape final : public Tape {
 public:
  StTape(Fd fd, std::string name);

  std::size_t read(std::span<std::byte> buf) override;
  void write(std::span<const std::byte> data) override;
  // MTIOCTOP with mt_op = op and mt_count = count, unchanged (MTSETDRVBUFFER
  // counts carry their sub-command in the top bits).
  void op(MtOp op, int count) override;
  TapeStatus status() override;
  std::int64_t tell() override;
  std::int64_t seek(std::int64_t offset, int whence) override;
  void close() override;
  bool keeps_records() const override { return true; }
  int poll_fd() const override { return fd_.get(); }

  // MTIOCGET verbatim.
  MtGet raw_status();

 private:
  Fd fd_;
};

// Opens a character device with open(2) flags as given (mt adds O_NONBLOCK
// for commands that must work without a tape, as mt-st does); path is
// relative to dir_fd (openat(2)).
std::unique_ptr<Tape> open_st_tape(const std::string& path, int flags, int dir_fd = AT_FDCWD);

}  // namespace tk
