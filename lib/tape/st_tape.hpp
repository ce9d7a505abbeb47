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

class StTape final : public Tape {
 public:
  StTape(Fd fd, std::string name);

  std::size_t read(std::span<std::byte> buf) override;
  void write(std::span<const std::byte> data) override;
  // MTIOCTOP with mt_op = op and mt_count = count, unchanged (MTSETDRVBUFFER
  // counts carry their sub-command in the top bits).
  void op(MtOp op, int count) override;
  TapeStatus status() override;
  // MTIOCGET verbatim, and read as a TapeStatus.
  StatusReport status_report() override;
  std::int64_t tell() override;
  std::int64_t seek(std::int64_t offset, int whence) override;
  void close() override;
  bool keeps_records() const override { return true; }
  int poll_fd() const override { return fd_.get(); }
  // SG_IO on the st node itself: no /dev/sg mapping needed.
  std::vector<std::uint8_t> health_data(scsi::HealthQuery query) override;

 private:
  MtGet read_mtget();

  Fd fd_;
};

// Opens a character device with open(2) flags as given (mt adds O_NONBLOCK
// for commands that must work without a tape, as mt-st does); path is
// relative to dir_fd (openat(2)).
// A blocking open waits for a loading drive as open_device_waiting says, up
// to timeout_s seconds (0: as long as it takes).
std::unique_ptr<Tape> open_st_tape(const std::string& path, int flags, int dir_fd = AT_FDCWD,
                                   int timeout_s = 0);

}  // namespace tk
