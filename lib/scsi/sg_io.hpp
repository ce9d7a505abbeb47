// One SCSI command through ioctl(SG_IO) on a descriptor the caller owns: the
// st node itself (/dev/nst0), so no /dev/sg mapping is needed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../error.hpp"
#include "cdb.hpp"

namespace tk::scsi {

// Why a command got no data back.
enum class Refusal {
  not_scsi,         // the descriptor takes no SG_IO (ENOTTY, EINVAL)
  not_permitted,    // EPERM, EACCES: SG_IO needs CAP_SYS_RAWIO or write access
  illegal_request,  // CHECK CONDITION, ILLEGAL REQUEST: no such page or command
  no_medium,        // CHECK CONDITION, NOT READY, MEDIUM NOT PRESENT
  check_condition,  // any other CHECK CONDITION
  transport,        // a host, driver or status failure without sense
  system,           // another errno from the ioctl
  other_server,     // a remote drive behind an rmt that is not tapekit's: nothing was asked
  unknown_query,    // tapekit's rmt, older than the question: nothing was asked
};

// what() reads "COMMAND: REASON", e.g. "LOG SENSE page 0x2e: the drive does
// not support it (ILLEGAL REQUEST, asc 0x24 ascq 0x00)".
class ScsiError : public tk::Error {
 public:
  ScsiError(int errnum, Refusal refusal, const std::string& command, const std::string& reason);
  const char* what() const noexcept override { return text_.c_str(); }
  Refusal refusal() const noexcept { return refusal_; }
  // REASON alone (what tapekit's rmt sends back: its client knows COMMAND).
  const std::string& reason() const noexcept { return reason_; }

 private:
  Refusal refusal_;
  std::string reason_;
  std::string text_;
};

// The refusal an errno of ScsiError stands for (each kind has its own,
// but check_condition and transport share EIO): how a client reads the E
// reply of tapekit's rmt to a health query.
Refusal refusal_for_errno(int errnum) noexcept;

class ScsiDevice {
 public:
  // Takes no ownership of fd; name is for messages.
  ScsiDevice(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}

  // Sends cdb (data in, cdb.allocation_length bytes) and returns the bytes
  // the drive sent. Throws ScsiError.
  std::vector<std::uint8_t> run(const Cdb& cdb, unsigned timeout_ms = 60000) const;
  // The whole reply to a health query, however long (up to
  // max_allocation_length): a log page's header first, then as many bytes
  // as it says, as sg_logs asks; another reply asked again at the length
  // its header gives when the first allocation length cut it short.
  // Throws ScsiError.
  std::vector<std::uint8_t> run_whole(HealthQuery query) const;

 private:
  int fd_;
  std::string name_;
};

}  // namespace tk::scsi
