// tk::Error: the one failure type of the library, errno plus what was being done.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace tk {

// A failed system call or operation. what() reads "context: strerror(errnum)",
// e.g. "write /dev/nst0: No space left on device". Context starts lower-case.
class Error : public std::system_error {
 public:
  Error(int errnum, std::string context);
  // Bytes of the failed transfer that did reach the device before the error.
  Error(int errnum, std::string context, std::size_t bytes_done);

  const char* what() const noexcept override { return message_.c_str(); }
  int errnum() const noexcept { return code().value(); }
  const std::string& context() const noexcept { return context_; }
  std::size_t bytes_done() const noexcept { return bytes_done_; }

 private:
  std::string context_;
  std::string message_;
  std::size_t bytes_done_ = 0;
};

// Writes a device had already accepted (buffered, as a drive buffers them)
// that never reached the medium. errnum is EIO; cause() is what the medium
// reported. Callers that count what they wrote take bytes_lost() back off.
class LostWrites : public Error {
 public:
  LostWrites(std::string context, std::uint64_t bytes_lost, std::uint64_t records_lost, int cause)
      : LostWrites(EIO, std::move(context), bytes_lost, records_lost, cause) {}
  std::uint64_t bytes_lost() const noexcept { return bytes_lost_; }
  std::uint64_t records_lost() const noexcept { return records_lost_; }
  int cause() const noexcept { return cause_; }

 protected:
  LostWrites(int errnum, std::string context, std::uint64_t bytes_lost, std::uint64_t records_lost,
             int cause)
      : Error(errnum, std::move(context)),
        bytes_lost_(bytes_lost),
        records_lost_(records_lost),
        cause_(cause) {}

 private:
  std::uint64_t bytes_lost_;
  std::uint64_t records_lost_;
  int cause_;
};

// A read whose record is larger than the caller's buffer (ENOMEM, the st
// rule). record_bytes() is the record's size where the backend knows it (a
// SIMH image does; st and rmt cannot tell), else 0.
class RecordTooLarge : public Error {
 public:
  RecordTooLarge(std::string context, std::uint64_t record_bytes)
      : Error(ENOMEM, std::move(context)), record_bytes_(record_bytes) {}
  std::uint64_t record_bytes() const noexcept { return record_bytes_; }

 private:
  std::uint64_t record_bytes_;
};

// Writes a tape had taken without acknowledging them yet (a remote tape's
// pipelined writes, Tape::unacknowledged) that never reached the medium,
// because a write before them failed: errnum is that failure's (ENOSPC at
// the end of a volume). They are the last records_lost() of the writes not
// acknowledged when the failure came, bytes_lost() of their bytes: the
// first of them may have reached it in part (the rest of it is lost), and
// any writes still unacknowledged after the failure come after them. The
// bytes themselves are the caller's: a caller that keeps what it wrote until
// it is acknowledged (buffer keeps its blocks in its queue) writes them
// again elsewhere; one that counted them when written takes bytes_lost() back.
class UnwrittenRecords : public LostWrites {
 public:
  UnwrittenRecords(int errnum, std::string context, std::uint64_t records, std::uint64_t bytes)
      : LostWrites(errnum, std::move(context), bytes, records, errnum) {}
};

// A remote tape's parallel stream (lib/tape/remote_tape.hpp) ended or
// could not join: the session is over. context() names the stream, how its
// remote shell ended and how many records are on the tape; the records lost
// are the writes in flight that did not reach it (when that is known).
class StreamLost : public UnwrittenRecords {
 public:
  StreamLost(std::string context, std::uint64_t records, std::uint64_t bytes)
      : UnwrittenRecords(EIO, std::move(context), records, bytes) {}
};

// A SIMH tape image (lib/tape/simh_tape.hpp) that cannot be read as one:
// EIO from a damaged image, EMEDIUMTYPE from a file that is no image at all;
// damage() says what and where ("record of 600000 bytes cut short by the end
// of the image at offset 600008"), for tools whose own error line (mt-st's
// perror) has no room for it.
class DamagedImage : public Error {
 public:
  DamagedImage(std::string context, std::string damage, int errnum = EIO)
      : Error(errnum, std::move(context) + " (" + damage + ")"), damage_(std::move(damage)) {}
  // Whether `mt verify` can say more (a damaged image), not a foreign file.
  bool is_damage() const noexcept { return errnum() == EIO; }
  const std::string& damage() const noexcept { return damage_; }

 private:
  std::string damage_;
};

// EMEDIUMTYPE: the file is no SIMH image at all (a tar archive another rmt
// wrote under a .tap name); begins() is its first bytes, unprintable ones as
// ".".
class ForeignFile : public DamagedImage {
 public:
  ForeignFile(std::string context, std::string damage, std::string begins)
      : DamagedImage(std::move(context), std::move(damage), EMEDIUMTYPE),
        begins_(std::move(begins)) {}
  const std::string& begins() const noexcept { return begins_; }

 private:
  std::string begins_;
};

// Bad command-line input (unknown option, malformed size). Tools map it to
// their usage status; the message names the option and value.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A diagnostic whose exact wording and exit status are part of a replaced
// program's interface (scripts grep for them). Printed verbatim, no prefix.
class ExactExit : public std::runtime_error {
 public:
  ExactExit(int status, std::string text)
      : std::runtime_error(std::move(text)), status_(status) {}
  int status() const noexcept { return status_; }

 private:
  int status_;
};

// Whether errnum means the medium is full: ENOSPC, or EFBIG from a file that
// reached the largest size it may have (ulimit -f, the file system's own
// limit). Either way the bytes before it are on the medium and no more fit,
// so both end a volume alike.
constexpr bool medium_full(int errnum) noexcept { return errnum == ENOSPC || errnum == EFBIG; }

// Throws Error(errno, context); call right after the failing syscall.
[[noreturn]] void throw_errno(std::string context);

}  // namespace tk
