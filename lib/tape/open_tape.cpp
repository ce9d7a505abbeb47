// open_tape: the only code that knows every backend; it picks one by name
// and by what is there.
#include "tape.hpp"

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>

#include "../error.hpp"
#include "file_tape.hpp"
#include "open_wait.hpp"
#include "simh_tape.hpp"
#include "remote_internal.hpp"
#include "remote_tape.hpp"
#include "st_tape.hpp"
#include "virtual_tapes.hpp"

namespace tk {

std::string record_larger_than(const std::string& tape_name, const std::string& limit) {
  std::string text = "record larger than " + limit;
  if (is_remote_name(tape_name)) text += " (or the rmt server's --max-record)";
  return text;
}

bool is_remote_name(const std::string& name) {
  auto colon = name.find(':');
  if (colon == std::string::npos || colon == 0) return false;
  return name.find('/') > colon;
}

bool opens_remote(const std::string& name, const OpenOptions& options) {
  if (options.force_local || !is_remote_name(name)) return false;
  // Only a name without any "/" (backup-10:00.tar, tape:0) may be a local
  // file that exists: host:/dev/nst0 must never be taken over by a
  // "host:" directory or link someone made where the program runs.
  struct stat st {};
  return name.find('/') != std::string::npos ||
         ::fstatat(options.dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0;
}

std::size_t largest_write_window(const std::string& name, const OpenOptions& options) {
  if (!opens_remote(name, options)) return 0;
  return detail::max_window;
}

std::unique_ptr<Tape> tape_from_fd(int fd, std::string name) {
  struct stat st {};
  if (::fstat(fd, &st) == -1) throw_errno("stat " + name);
  return std::make_unique<FileTape>(Fd(fd), std::move(name), false, S_ISCHR(st.st_mode));
}

std::unique_ptr<Tape> open_tape(const std::string& name, int flags, const OpenOptions& options) {
  if (name == "-" && options.dir_fd == AT_FDCWD)
    return tape_from_fd((flags & O_ACCMODE) == O_RDONLY ? 0 : 1,
                        (flags & O_ACCMODE) == O_RDONLY ? "standard input" : "standard output");
  if (opens_remote(name, options)) return std::make_unique<RemoteTape>(name, flags, options);
  // The backend follows what the open will reach: with O_NOFOLLOW a link is
  // not looked through, so a link to an image is no image and a link to a
  // device no drive; the open itself then refuses the link. A name is a
  // virtual tape only where one was made or the opt-in says so, never for
  // its spelling: as the system's rmt, /x/nightly.tap must stay the plain
  // file GNU tar's rmt overwrote each night.
  struct stat st {};
  int at_flags = (flags & O_NOFOLLOW) != 0 ? AT_SYMLINK_NOFOLLOW : 0;
  bool found = ::fstatat(options.dir_fd, name.c_str(), &st, at_flags) == 0;
  if (opens_virtual_tape(name, flags, found, st, options)) {
    try {
      return open_simh_tape(name, flags, options);
    } catch (const ForeignFile& e) {
      if (!options.foreign_as_file || (flags & O_ACCMODE) != O_RDONLY) throw;
      options.foreign_as_file(name + ": not a SIMH tape image (begins \"" + e.begins() +
                              "\"); opened read-only as a plain file");
    }
    return open_file_tape(name, flags, options);
  }
  if (found && S_ISCHR(st.st_mode))
    return open_st_tape(name, flags, options.dir_fd,
                        timeout_seconds(options.open_timeout, "TAPEKIT_OPEN_TIMEOUT", 0));
  // buffer -o /dev/nst9 with no such drive would make a regular file in /dev
  // and report success while the backup went to a RAM-backed file: a name
  // right in /dev is a device or nothing (/dev/shm and the like are not).
  if (!found && (flags & O_CREAT) != 0 && options.dir_fd == AT_FDCWD && name.starts_with("/dev/") &&
      name.find('/', 5) == std::string::npos)
    throw Error(ENODEV, "open " + name + " (no such device; a regular file is not made in /dev)");
  return open_file_tape(name, flags, options);
}

}  // namespace tk
