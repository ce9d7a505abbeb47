// lib/scsi/sg_io: a descriptor that takes no SG_IO is refused with one
// message naming the command, the node and why.
#include "../../lib/scsi/sg_io.hpp"

#include <cerrno>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <string>

#include "../../lib/io.hpp"

namespace {

TEST(ScsiDevice, ANodeThatIsNoScsiDeviceIsRefusedByName) {
  tk::Fd fd = tk::open_file("/dev/null", O_RDONLY);
  tk::scsi::ScsiDevice device(fd.get(), "/dev/null");
  try {
    device.run(tk::scsi::log_sense(0x2e));
    FAIL() << "SG_IO on /dev/null succeeded";
  } catch (const tk::scsi::ScsiError& e) {
    EXPECT_EQ(e.refusal(), tk::scsi::Refusal::not_scsi);
    EXPECT_EQ(e.errnum(), ENOTTY);
    EXPECT_EQ(std::string(e.what()),
              "LOG SENSE page 0x2e: /dev/null is not a SCSI device (SG_IO: Inappropriate ioctl "
              "for device)");
  }
}

TEST(ScsiDevice, ANodeThatIsNotOpenIsASystemError) {
  tk::scsi::ScsiDevice device(-1, "closed");
  try {
    device.run(tk::scsi::inquiry());
    FAIL() << "SG_IO on -1 succeeded";
  } catch (const tk::scsi::ScsiError& e) {
    EXPECT_EQ(e.refusal(), tk::scsi::Refusal::system);
    EXPECT_EQ(std::string(e.what()), "INQUIRY: SG_IO on closed: Bad file descriptor");
  }
}

}  // namespace
