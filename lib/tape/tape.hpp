// tk::Tape: the one interface every program uses to reach "a tape", whatever
// is behind the name (st device, SIMH .tap image, remote rmt, plain file).
#pragma once

#include <cstddef>
#include <cstdint>
#include <fcntl.h>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <sys/mtio.h>
#include <sys/types.h>
#include <vector>

#include "../scsi/cdb.hpp"
#include "tape_status.hpp"

namespace tk {

// MTIOCTOP operations, valued as Linux's <sys/mtio.h> op codes, so the st
// backend and rmt's raw "I" requests pass them through unchanged.
enum class MtOp : int {
  reset = MTRESET,
  fsf = MTFSF,
  bsf = MTBSF,
  fsr = MTFSR,
  bsr = MTBSR,
  weof = MTWEOF,
  rewind = MTREW,
  offline = MTOFFL,
  nop = MTNOP,
  retension = MTRETEN,
  bsfm = MTBSFM,
  fsfm = MTFSFM,
  eom = MTEOM,
  erase = MTERASE,
  ras1 = MTRAS1,
  ras2 = MTRAS2,
  ras3 = MTRAS3,
  setblk = MTSETBLK,
  setdensity = MTSETDENSITY,
  seek = MTSEEK,
  tell = MTTELL,
  setdrvbuffer = MTSETDRVBUFFER,
  fss = MTFSS,
  bss = MTBSS,
  wsm = MTWSM,
  lock = MTLOCK,
  unlock = MTUNLOCK,
  load = MTLOAD,
  unload = MTUNLOAD,
  compression = MTCOMPRESSION,
  setpart = MTSETPART,
  mkpart = MTMKPART,
  weofi = 35,  // MTWEOFI, which only <linux/mtio.h> defines
};

// OpenOptions::connect_timeout's default and its largest value, in seconds.
inline constexpr int default_connect_timeout = 30;
inline constexpr int max_connect_timeout = 86400;

// Options for opening a name; the remote fields apply to [user@]host:path.
struct OpenOptions {
  mode_t create_mode = 0666;
  std::string rsh_command;  // empty: $RSH, else "ssh"
  std::string rmt_command;  // empty: $RMT, else "/etc/rmt"
  bool force_local = false;  // a name with a colon is still a local file (GNU tar's --force-local)
  // Local names are relative to this directory (openat(2)); rmt hands the
  // directory it opened confined beneath an --allow entry. Away from
  // AT_FDCWD, "-" is a file of that name, not standard input or output.
  int dir_fd = AT_FDCWD;
  // Seconds the remote shell and rmt get to give their first answer; -1:
  // take $TAPEKIT_CONNECT_TIMEOUT, else 30; 0: wait for ever.
  int connect_timeout = -1;
  // Seconds the remote device then gets to open (a cartridge loading and
  // calibrating, a rewind from the far end of a tape: a minute or more);
  // -1: take $TAPEKIT_OPEN_TIMEOUT, else 0; 0: as long as the drive takes.
  int open_timeout = -1;
  // A remote "*.tap" name is opened even when the rmt there is not tapekit's
  // (and so makes it a plain file); otherwise that open fails (EMEDIUMTYPE).
  bool plain_remote = false;
  // Parallel streams to a remote tape (tapekit's rmt, pipelined): N remote
  // shells joined into one session; 0: as many as auto_streams() picks.
  int streams = 1;
  std::uint64_t stream_rate = 0;  // bytes a second --streams auto aims at; 0: its default
  // Told one line (no newline) about a stream that could not join, the
  // session going on with the others; unset: nothing is said.
  using Warn = std::function<void(const std::string&)>;
  Warn warn;
  // Set: a "*.tap" file that is no SIMH image at all (a tar archive another
  // rmt, or tar itself, wrote under that name), opened read-only, is opened
  // as the plain file it is, and this is told one line saying so, instead
  // of the open failing with EMEDIUMTYPE. An open for writing still fails:
  // nothing writes over a file that is no tape. rmt sets it for clients
  // that are not tapekit's, which ask for the file they wrote.
  Warn foreign_as_file;
  // A virtual tape whose drive state cannot be read is refused; set (mt's
  // rewind and eod, which put the drive at an absolute position), the state
  // is said through warn and the drive starts afresh instead.
  bool replace_unusable_state = false;
  // An open for writing of a regular file with more than one hard link is
  // refused (EMLINK) before anything is written or truncated: rmt's --allow
  // sets it, so that a link planted inside an allowed tree cannot carry
  // writes to a file outside it.
  bool single_link_writes = false;
  // Which names are virtual tapes besides those made one (virtual_tapes.hpp):
  // shell patterns, "*.tap" or "/srv/tapes/*"; unset: $TAPEKIT_VIRTUAL_TAPES's,
  // else none, and a name nothing made a virtual tape is a plain file.
  std::optional<std::vector<std::string>> virtual_tapes;
};

// What MTIOCGET reported, and its portable reading.
struct StatusReport {
  MtGet mtget;
  TapeStatus status;
};

class Tape {
 public:
  virtual ~Tape() = default;
  Tape() = default;
  Tape(const Tape&) = delete;
  Tape& operator=(const Tape&) = delete;

  // Reads one record into buf; 0 at a filemark (and moves past it) or at end
  // of data. A record larger than buf fails with ENOMEM (the st rule).
  virtual std::size_t read(std::span<std::byte> buf) = 0;
  // Writes data as one record (tapes) or all of it (streams). On failure
  // throws Error whose bytes_done() says how much reached the medium.
  virtual void write(std::span<const std::byte> data) = 0;
  virtual void op(MtOp op, int count) = 0;
  virtual TapeStatus status() = 0;
  // status() and the struct mtget it comes as: the driver's own where there
  // is a driver (st), else the one a SCSI-2 drive would report. One query.
  virtual StatusReport status_report();
  // MTIOCPOS: the logical block address.
  virtual std::int64_t tell() = 0;
  // lseek(2) semantics; tapes that cannot seek throw Error(ESPIPE/ENOTTY).
  virtual std::int64_t seek(std::int64_t offset, int whence) = 0;
  // Closes, reporting failures (closing after a write writes a filemark).
  // The destructor closes quietly if close() was not called.
  virtual void close() = 0;

  // True where one write is one record and reads return records (tapes);
  // false for byte streams (files, pipes), where records do not exist.
  virtual bool keeps_records() const = 0;
  // The data of the drive's answer to one fixed, read-only health command
  // (scsi::health_cdb): a local st drive is sent it through SG_IO, tapekit's
  // rmt asks the drive it opened, a virtual tape answers from its image as
  // an LTO drive would. Throws scsi::ScsiError: a drive's refusal, or
  // Refusal::not_scsi where nothing behind the name can answer (a plain
  // file, a pipe, another rmt).
  virtual std::vector<std::uint8_t> health_data(scsi::HealthQuery query);
  // The descriptor to poll for readiness, or -1.
  virtual int poll_fd() const { return -1; }

  // What a caller that counts its writes must ask of a tape that answers
  // them late (a remote tape whose writes are pipelined): every other tape
  // answers each write before it returns, and keeps these defaults.
  //
  // Writes sent whose answer has not come: write() returned for them, but
  // whether they are on the medium is not known (yet, or, after a stop cut
  // the session short, at all).
  struct Unacknowledged {
    std::uint64_t bytes = 0;
    std::size_t records = 0;
  };
  virtual Unacknowledged unacknowledged() const noexcept { return {}; }
  // Waits for answers until at most `leave` writes are unacknowledged; a
  // failure among them throws here as it would have at a later write
  // (UnwrittenRecords). For a caller that keeps what it wrote until it is
  // acknowledged and needs some of that room back before it can go on.
  virtual void settle_writes(std::size_t leave = 0) { (void)leave; }
  // Waits for the answers to every write, as close() would first, so that
  // the caller may ask one more thing (buffer: the TapeAlert flags) before
  // the close. A failure is kept for close() to throw after the filemark,
  // exactly as if close() had met it; false then (ask nothing: the session
  // may be gone), and when the session is broken or closed.
  virtual bool settle_before_close() noexcept { return true; }
  // After the connection to the tape was lost: why, and how the remote
  // shell ended ("connection lost; the remote shell ssh for host ended with
  // exit status 255"); empty while it holds. `unconfirmed_*` are the writes
  // that had been sent whole but that the server never answered, and
  // `bytes_there` how many of their bytes a read-back through a new
  // connection found in the file: only a plain file that the open truncated
  // is read back; otherwise it is not known and the writes stay
  // unacknowledged. Read back, those in the file count as on the tape and
  // the others as unwritten.
  struct LinkLoss {
    std::string reason;
    std::uint64_t unconfirmed_records = 0;
    std::uint64_t unconfirmed_bytes = 0;
    std::optional<std::uint64_t> bytes_there;
  };
  virtual LinkLoss link_loss() const { return {}; }
  // The caller will now read records one after another, each into a buffer
  // of the same size, until a read returns 0 or fails, and ask nothing else
  // meanwhile unless it stops early: a remote tape may then ask for records
  // ahead of the reads (never past a filemark, end of data or an error).
  virtual void expect_sequential_reads() {}
  const std::string& name() const noexcept { return name_; }

 protected:
  explicit Tape(std::string name) : name_(std::move(name)) {}

 private:
  std::string name_;
};

// Opens name with open(2) flags (O_RDONLY, O_WRONLY|O_CREAT, ...), choosing
// the backend: "[user@]host:path" remote, a SIMH image where a virtual tape
// was made or the opt-in names one (virtual_tapes.hpp), a character device
// st, "-" standard input (O_RDONLY) or output, anything else a file. See
// OpenOptions::foreign_as_file.
std::unique_ptr<Tape> open_tape(const std::string& name, int flags,
                                const OpenOptions& options = {});

// Wraps an inherited descriptor (stdin/stdout) as a tape; a character device
// gets record semantics, anything else is a stream. Takes no ownership.
std::unique_ptr<Tape> tape_from_fd(int fd, std::string name);

// True for "host:path" and "user@host:path" names (a "/" before the ":"
// makes it a local path, as in GNU tar's rule).
bool is_remote_name(const std::string& name);

// What a read that failed with ENOMEM met, for a tool's message: "record
// larger than LIMIT", LIMIT naming the tool's own setting ("-s 10240 bytes");
// a remote tape may have met the rmt server's --max-record instead.
std::string record_larger_than(const std::string& tape_name, const std::string& limit);

// Whether open_tape goes to a remote host for name: a remote-looking name,
// unless options.force_local, or the name has no "/" and a file of that
// very name exists here (the programs tapekit replaces never went remote, so
// "backup-10:00.tar" that is there stays the local file it always was).
bool opens_remote(const std::string& name, const OpenOptions& options);

// The most bytes of writes a tape opened by this name may hold
// unacknowledged (Tape::unacknowledged) when the link allows: a remote
// tape's pipeline window; 0 for any other, which answers each write at once.
std::size_t largest_write_window(const std::string& name, const OpenOptions& options);

}  // namespace tk
