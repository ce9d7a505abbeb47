// Putting an image in the drive: opening it (open_simh_tape), refusing a file
// that is no SIMH image, loading the drive's state from its sidecar and
// completing a write session its writer never closed, and the cartridge
// commands that load and save that state (create_virtual_tape,
// set_virtual_tape_protect). The tape operations are simh_tape.cpp's.
#include "simh_tape.hpp"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <fcntl.h>
#include <memory>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include "../error.hpp"
#include "../io.hpp"
#include "drive_state.hpp"
#include "file_tape.hpp"
#include "image_lock.hpp"
#include "session_recovery.hpp"
#include "state_home.hpp"
#include "virtual_tapes.hpp"
#include "simh_format.hpp"
#include "simh_internal.hpp"

namespace tk {

std::uint64_t file_size(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) == -1) throw_errno("stat " + path);
  return static_cast<std::uint64_t>(st.st_size);
}

std::string simh_state_path(const std::string& image_path) { return image_path + ".state"; }

namespace {

using simh::Kind;
using simh::Object;

bool same_file(int a, int b) noexcept {
  struct stat sa {}, sb {};
  return ::fstat(a, &sa) == 0 && ::fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

// A file named *.tap that is no SIMH image (a tar file some other rmt wrote
// under that name, a gzip archive) must not be taken for a damaged tape, nor
// written over. A file the drive has never seen is an image when its objects
// chain from the start to a filemark, an end-of-medium marker or the clean
// end of the file, or when at least its first record is whole (both length
// words agree: chance alone does that once in 2^32): damage after that is
// an image's, which reading reports and spacing and writing can mend. Random
// bytes may well begin with a length word whose record runs past the end
// (gzip's magic reads as 560 927 bytes): that alone is no image.
void refuse_foreign_file(int fd, std::uint64_t size, const std::string& path) {
  simh::ImageReader image(fd, size);
  Object first = image.next(0);
  if (first.kind != Kind::invalid) return;
  unsigned char head[8] = {};
  ssize_t n = ::pread(fd, head, sizeof head, 0);
  std::string found;
  for (ssize_t i = 0; i < n; ++i)
    found += std::isprint(head[i]) ? static_cast<char>(head[i]) : '.';
  throw ForeignFile("open " + path,
                    "not a SIMH tape image: " + first.problem + " at offset " +
                        std::to_string(first.start) + ", the file begins \"" + found + "\"",
                    found);
}

// The state file's trouble, in the words of the image's open: tools print
// the open's context, and the operator must learn which file to look at
// and how to go on. An unusable state is never taken for none: the image
// would load at BOT and the next write would cut every file on it.
DriveState load_state_for(const StateHome& home, const std::string& path) {
  try {
    return load_drive_state(home.dir.get(), home.name);
  } catch (const Error& e) {
    throw DamagedImage("open " + path,
                       "its drive state " + home.shown + " is unusable: " + e.what() +
                           "; `mt -f " + path + " eod` puts the drive at the end of its data " +
                           "(to append), `mt -f " + path + " rewind` at its start (to read)",
                       e.errnum());
  }
}

}  // namespace

LoadedState load_completed_state(const StateHome& home, const std::string& path, int fd,
                                 mode_t mode, bool may_complete, const OpenOptions::Warn& warn,
                                 bool replace_unusable) {
  LoadedState loaded;
  try {
    loaded.state = load_state_for(home, path);
  } catch (const DamagedImage& e) {
    if (!replace_unusable) throw;
    // rewind and eod set an absolute position: the drive starts afresh.
    if (warn) warn(path + ": " + e.damage().substr(0, e.damage().find("; `mt")) +
                   ": the drive starts afresh at BOT");
    loaded.state = DriveState{};
    loaded.unusable_replaced = true;
  }
  DriveState& state = loaded.state;
  struct stat st {};
  if (::fstat(fd, &st) == -1) throw_errno("stat " + path);
  const auto size = static_cast<std::uint64_t>(st.st_size);
  auto say = [&](const std::string& text) {
    if (warn) warn(path + ": " + text);
  };
  if (state.writing) {
    SessionFindings found =
        examine_interrupted_session(fd, size, static_cast<std::uint64_t>(st.st_ino), state);
    if (found.ours) {
      // The repair goes through a descriptor of its own: the caller's may
      // be read-only, and the lock it holds already covers this one.
      Fd repair;
      if (may_complete) {
        int rw = retry_eintr([&] {
          return ::openat(home.dir.get(), home.image.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        });
        if (rw == -1 && errno != EACCES && errno != EROFS && errno != EPERM)
          throw_syscall_error("open " + path);
        if (rw != -1) repair = Fd(rw);
      }
      if (!repair.valid() || !same_file(repair.get(), fd)) {
        loaded.pending = describe_pending_session(found);
        say(loaded.pending);
        // Saved past what the image now holds (staged records lost with
        // their writer): the reader is put where the session began.
        if (state.offset > size) {
          state.offset = state.session.start;
          state.file = state.session.file;
          state.block = state.session.block;
          state.lba = state.session.lba;
          state.eof = EofState::none;
        }
        return loaded;
      }
      complete_interrupted_session(repair.get(), found, state, path);
      save_drive_state(home.dir.get(), home.name, state, mode, &st);
      repair.close("close " + path);
      say(describe_completed_session(state.recovery));
      return loaded;
    }
    say(found.changed + ", so nothing of it was cut: the image loads at BOT as a cartridge new to "
                        "the drive");
    state.writing = false;
    state.session = WriteSession{};
    refuse_foreign_file(fd, size, path);
    state.rewind();
    loaded.new_cartridge = true;
    return loaded;
  }
  // A cartridge new to the drive: no state, or the image changed behind
  // the drive's back. It loads at BOT, once it is seen to be an image.
  const bool known = !loaded.unusable_replaced && state.offset <= size &&
                     state.image_mtime_ns >= 0 && state.image_mtime_ns == mtime_ns(st);
  if (!known) {
    refuse_foreign_file(fd, size, path);
    state.rewind();
    loaded.new_cartridge = true;
  }
  return loaded;
}

namespace {

// Whether an open may replace the image's state file: when it may write
// the image, or owns it (an owner's read-only image still keeps its
// position), or is root (who gives the file back to the owner).
bool may_save_state(int fd, bool file_protected) {
  if (!file_protected) return true;
  struct stat st {};
  if (::fstat(fd, &st) == -1) return false;
  const uid_t me = ::geteuid();
  return me == 0 || me == st.st_uid;
}

// Whether a new state file can be made beside the image. A reader of an
// image in a place it cannot write (a read-only mount, another's
// directory) reads it all the same, its position not kept; decided here,
// so that a save that fails later is a failure, and said.
bool state_directory_writable(const StateHome& home) {
  return ::faccessat(home.dir.get(), ".", W_OK | X_OK, AT_EACCESS) == 0;
}

}  // namespace

std::unique_ptr<Tape> open_simh_tape(const std::string& path, int flags,
                                     const OpenOptions& options) {
  const int dir_fd = options.dir_fd;
  const int access_mode = flags & O_ACCMODE;
  const bool want_write = access_mode != O_RDONLY;
  const bool nonblock = (flags & O_NONBLOCK) != 0;
  const int nofollow = flags & O_NOFOLLOW;
  // The drive must be able to save its state before anything is created.
  check_state_names(path);
  // What the open will reach: a dangling symlink is no image yet, and the
  // open creates the image it names (with O_NOFOLLOW the link itself is
  // there, and the open refuses it).
  const bool exists =
      ::faccessat(dir_fd, path.c_str(), F_OK, nofollow != 0 ? AT_SYMLINK_NOFOLLOW : 0) == 0;
  // An image the user may not write to is a cartridge with its tab set.
  const bool file_protected = exists && ::faccessat(dir_fd, path.c_str(), W_OK, 0) != 0;
  if (want_write && file_protected && !nonblock) throw Error(EROFS, "open " + path);

  // O_TRUNC is ignored, as st ignores it (decision 6); a missing image opened
  // for writing is a blank cartridge.
  int open_flags = (want_write && !file_protected) ? O_RDWR | O_CREAT : O_RDONLY;
  // The caller's safety flags stay (rmt's --allow adds O_NOFOLLOW, its
  // --write-once O_EXCL).
  open_flags |= nofollow | ((open_flags & O_CREAT) ? (flags & O_EXCL) : 0);
  Fd fd = open_file_at(dir_fd, path, open_flags, options.create_mode);
  if (options.single_link_writes && want_write) {
    struct stat st {};
    if (::fstat(fd.get(), &st) == -1) throw_errno("stat " + path);
    refuse_linked_write(st, path);
  }
  lock_image(fd.get(), path);
  StateHome home = find_state_home(dir_fd, path, fd.get());
  const bool may_write = want_write && !file_protected;
  LoadedState loaded = load_completed_state(home, path, fd.get(), options.create_mode, may_write,
                                            options.warn, options.replace_unusable_state);
  DriveState& state = loaded.state;
  if (!state.online && !nonblock) throw Error(ENOMEDIUM, "open " + path);
  // The load rule (man mt, "Virtual tapes"): an open loads the cartridge
  // when it is new to the drive; `mt load` after an unload is the other.
  if (loaded.new_cartridge && state.online) ++state.load_count;

  bool writable = may_write;
  int write_errno = want_write ? EACCES : EBADF;
  const bool saves_state =
      may_save_state(fd.get(), file_protected) && (may_write || state_directory_writable(home));
  if (want_write && state.write_protect) {
    if (!nonblock) {
      // The drive refused the write as a drive does, with TapeAlert 9; the
      // state remembers the load and the flag for the next look at health.
      state.raise_alert(alert::write_protect);
      if (saves_state) {
        struct stat st {};
        if (::fstat(fd.get(), &st) == -1) throw_errno("stat " + path);
        state.image_mtime_ns = mtime_ns(st);
        save_drive_state(home.dir.get(), home.name, state, options.create_mode, &st);
      }
      throw Error(EROFS, "open " + path);
    }
    writable = false;  // st: an O_NONBLOCK open succeeds; writes get EACCES
  }
  // Loaded, so an image (a file that is none was refused above): it stays a
  // virtual tape when the opt-in that made it one is gone, or it is moved
  // away from its state.
  mark_virtual_tape(fd.get());
  return make_simh_tape(path, std::move(home), std::move(fd), state,
                        access_mode != O_WRONLY, writable, write_errno, file_protected, saves_state,
                        options.create_mode);
}

void create_virtual_tape(const std::string& path, std::uint64_t capacity_bytes,
                         const CartridgeLabel& label) {
  if (!label.barcode.empty() && !valid_label(label.barcode))
    throw Error(EINVAL, "create " + path + " (barcode " + label.barcode +
                            ": 1 to 32 printable characters, no space)");
  if (!label.manufactured.empty() && !valid_mam_date(label.manufactured))
    throw Error(EINVAL, "create " + path + " (manufacture date " + label.manufactured +
                            ": not YYYYMMDD)");
  check_state_names(path);
  Fd fd = open_file(path, O_RDWR | O_CREAT, 0666);
  struct stat st {};
  if (::fstat(fd.get(), &st) == -1) throw_errno("stat " + path);
  // A device is empty to fstat, and its state would be made in /dev.
  if (!S_ISREG(st.st_mode)) throw Error(EINVAL, "create " + path + " (not a regular file)");
  lock_image(fd.get(), path);
  if (file_size(fd.get(), path) != 0) throw Error(EEXIST, "create " + path);
  StateHome home = find_state_home(AT_FDCWD, path, fd.get());
  DriveState state;
  state.capacity = capacity_bytes;
  state.barcode = label.barcode;
  // A cartridge is made once: its date is today's unless given, and its
  // serial number the moment of making, which no other image shares by
  // chance.
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  state.manufactured = label.manufactured;
  if (state.manufactured.empty()) {
    struct tm utc {};
    char date[16] = {};
    ::gmtime_r(&now.tv_sec, &utc);
    std::strftime(date, sizeof date, "%Y%m%d", &utc);
    state.manufactured = date;
  }
  char serial[40] = {};
  std::snprintf(serial, sizeof serial, "TK%llX%09ld", static_cast<unsigned long long>(now.tv_sec),
                now.tv_nsec);
  state.serial = serial;
  save_drive_state(home.dir.get(), home.name, state, 0666);
  mark_virtual_tape(fd.get());
  fd.close("close " + path);
}

namespace {

// Changes the drive's state of the image at path without loading the
// cartridge: whoever may open the image may, and a session left
// unfinished stays for the next writer.
template <class Change>
void change_drive_state(const std::string& path, Change change) {
  Fd fd = open_file(path, O_RDONLY);
  lock_image(fd.get(), path);
  // The state is the cartridge's: a user who may read the image but not
  // write it must not replace it (in a shared directory, with a state of
  // their own that the owner's next write would find write-protected).
  if (::faccessat(AT_FDCWD, path.c_str(), W_OK, AT_EACCESS) != 0)
    throw Error(errno == EROFS ? EROFS : EACCES,
                "change the drive state of " + path + " (only a user who may write the image may)");
  StateHome home = find_state_home(AT_FDCWD, path, fd.get());
  DriveState state = load_completed_state(home, path, fd.get(), 0666, false, {}).state;
  change(state);
  struct stat st {};
  if (::fstat(fd.get(), &st) == -1) throw_errno("stat " + path);
  save_drive_state(home.dir.get(), home.name, state, 0666, &st);
  fd.close("close " + path);
}

}  // namespace

void set_virtual_tape_protect(const std::string& path, bool on) {
  change_drive_state(path, [&](DriveState& state) { state.write_protect = on; });
}

void set_virtual_tape_alerts(const std::string& path, std::uint64_t set, std::uint64_t clear) {
  change_drive_state(path, [&](DriveState& state) {
    state.tapealert = (state.tapealert & ~clear) | set;
  });
}

}  // namespace tk
