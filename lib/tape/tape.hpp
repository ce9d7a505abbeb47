// tk::Tape: the one interface every program uses to reach "a tape", whatever
// is behind the name (st device, SIMH .tap image, remote rmt, plain file).
#pragma once

#include <cstddef>
#include <cstdint>
#include <fcntl.h>
#include <memory>
#include <span>
#include <string>
#include <sys/types.h>

namespace tk {

// MTIOCTOP operations. The values are Linux's <sys/mtio.h> op codes, so the
// st backend and rmt's raw "I" requests pass them through unchanged.
enum class MtOp : int {
  reset = 0,
  fsf = 1,
  bsf = 2,
  fsr = 3,
  bsr = 4,
  weof = 5,
  rewind = 6,
  offline = 7,
  nop = 8,
  retension = 9,
  bsfm = 10,
  fsfm = 11,
  eom = 12,
  erase = 13,
  ras1 = 14,
  ras2 = 15,
  ras3 = 16,
  setblk = 20,
  setdensity = 21,
  seek = 22,
  tell = 23,
  setdrvbuffer = 24,
  fss = 25,
  bss = 26,
  wsm = 27,
  lock = 28,
  unlock = 29,
  load = 30,
  unload = 31,
  compression = 32,
  setpart = 33,
  mkpart = 34,
  weofi = 35,
};

// A portable snapshot of MTIOCGET. Status bits are kept as booleans; the st
// backend and the rmt codec convert to and from struct mtget.
struct TapeStatus {
  long drive_type = 0x72;  // mt_type: MT_ISSCSI2
  long partition = 0;      // st puts the partition in mt_resid
  std::int64_t file_number = -1;   // -1 = unknown
  std::int64_t block_number = -1;  // -1 = unknown
  std::uint32_t block_size = 0;    // 0 = variable
  std::uint32_t density = 0;
  long soft_errors = 0;  // mt_erreg
  bool bot = false;
  bool eof = false;
  bool eot = false;
  bool sm = false;
  bool eod = false;
  bool write_protected = false;
  bool online = false;
  bool door_open = false;
  bool immediate_report = false;
  bool cleaning_requested = false;
  bool compression = false;
  bool compression_known = false;  // false where the device cannot report it
};

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
  // Seconds the remote shell and rmt get to answer the open; -1: take
  // $TAPEKIT_CONNECT_TIMEOUT, else 30; 0: wait for ever.
  int connect_timeout = -1;
  // A remote "*.tap" name is opened even when the rmt there is not tapekit's
  // (and so makes it a plain file); otherwise that open fails (EMEDIUMTYPE).
  bool plain_remote = false;
  // Writes to a remote tape may be pipelined with tapekit's rmt (records
  // known to be on the tape only later); false: each waits for its reply.
  bool pipelined_writes = true;
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
  // The descriptor to poll for readiness, or -1.
  virtual int poll_fd() const { return -1; }
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
// the backend: "[user@]host:path" remote, "*.tap" SIMH image, a character
// device st, "-" standard input (O_RDONLY) or output, anything else a file.
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

}  // namespace tk
