// The virtual-tape rule: a file made a virtual tape, or a name the opt-in
// covers, is one; nothing else, whatever its name.
#include "virtual_tapes.hpp"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <fcntl.h>
#include <fnmatch.h>
#include <string_view>
#include <sys/xattr.h>
#include <unistd.h>

#include "../io.hpp"
#include "../path.hpp"
#include "drive_state.hpp"
#include "simh_tape.hpp"
#include "state_home.hpp"

namespace tk {
namespace {

std::string resolved_directory(const std::string& directory) {
  char buf[PATH_MAX];
  if (::realpath(directory.c_str(), buf) != nullptr) return buf;
  if (!directory.empty() && directory.front() == '/') return directory;
  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof cwd) == nullptr) return directory;
  return std::string(cwd) + "/" + directory;
}

std::string joined(const std::string& directory, const std::string& name) {
  return (directory == "/" ? "" : directory) + "/" + name;
}

// The absolute path of the file an open of name reaches (or creates):
// symlinks followed unless follow is false, the directory's real name.
std::string reached_path(int dir_fd, const std::string& name, bool follow) {
  if (dir_fd != AT_FDCWD) {
    const std::string directory = descriptor_path(dir_fd);
    return directory.empty() ? name : joined(directory, name);
  }
  const std::string target = follow ? after_symlinks(name) : name;
  return joined(resolved_directory(directory_of(target)), last_component(target));
}

// Whether a drive's state is beside image: a regular file that begins as
// one, not any file that happens to be called IMAGE.state (results.state
// beside results must not make a virtual tape of it).
// A state that is there but cannot be read is refused (EACCES and the
// like, naming it), never taken for none: the image would be written as a
// plain file over a tape someone made.
bool drive_state_beside(int dir_fd, const std::string& image) {
  const std::string state = simh_state_path(image);
  auto unreadable = [&](int errnum) {
    return Error(errnum, "open " + image + ": its drive state " + state +
                             " cannot be read, so whether it is a virtual tape is unknown");
  };
  // Looked at before it is opened: most files have none, and an open that
  // is only a question shows in every trace of the program.
  struct stat there {};
  if (::fstatat(dir_fd, state.c_str(), &there, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return false;
    throw unreadable(errno);
  }
  if (!S_ISREG(there.st_mode)) return false;
  const int fd = ::openat(dir_fd, state.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd == -1) {
    // Gone between the two looks: none.
    if (errno == ENOENT) return false;
    throw unreadable(errno);
  }
  Fd held(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw unreadable(errno);
  if (!S_ISREG(st.st_mode)) return false;
  char head[128];
  const ssize_t n = retry_eintr([&] { return ::pread(fd, head, sizeof head, 0); });
  if (n < 0) throw unreadable(errno);
  return n > 0 && begins_as_drive_state(std::string_view(head, static_cast<std::size_t>(n)));
}

// Whether what an open of name reaches carries one of the marks. Relative to
// a directory descriptor (rmt's confined opens, where no link is followed),
// through an O_PATH descriptor, which needs no permission on the file.
bool carries_mark(int dir_fd, const std::string& name, bool follow) {
  // An attribute that cannot be read (a file the caller may write but not
  // read) is refused as an unreadable state is, never taken for none.
  auto has = [&name](const std::string& path, bool through_links, const char* attribute) {
    if ((through_links ? ::getxattr(path.c_str(), attribute, nullptr, 0)
                       : ::lgetxattr(path.c_str(), attribute, nullptr, 0)) >= 0)
      return true;
    if (errno == ENODATA || errno == ENOTSUP || errno == ENOENT) return false;
    throw Error(errno, "open " + name + ": its attribute " + attribute +
                           " cannot be read, so whether it is a virtual tape is unknown");
  };
  std::string path = name;
  Fd held;
  if (dir_fd != AT_FDCWD) {
    const int fd = ::openat(dir_fd, name.c_str(), O_PATH | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
    if (fd == -1) {
      if (errno == ENOENT) return false;
      throw Error(errno, "open " + name + ": whether it is a virtual tape cannot be told");
    }
    held = Fd(fd);
    path = "/proc/self/fd/" + std::to_string(fd);
    follow = true;  // the magic link leads to what was opened
  }
  return has(path, follow, kVirtualTapeAttribute) || has(path, follow, kStateBesideAttribute);
}

}  // namespace

VirtualTapeNames::VirtualTapeNames(const std::vector<std::string>& patterns) {
  for (const std::string& given : patterns) {
    if (given.empty()) continue;
    Pattern p;
    p.whole_path = given.find('/') != std::string::npos;
    p.text = given;
    if (p.whole_path) {
      // The fixed directory part is resolved as the names it is matched
      // against are, so /srv/tapes/* still names them when /srv is a link.
      const auto glob = given.find_first_of("*?[");
      const auto slash = given.rfind('/', glob);
      if (slash == std::string::npos) {
        p.text = joined(resolved_directory("."), given);
      } else {
        const std::string directory = slash == 0 ? "/" : given.substr(0, slash);
        p.text = joined(resolved_directory(directory), given.substr(slash + 1));
      }
    }
    patterns_.push_back(std::move(p));
  }
}

VirtualTapeNames VirtualTapeNames::from_environment() {
  const char* value = std::getenv("TAPEKIT_VIRTUAL_TAPES");
  std::vector<std::string> patterns;
  if (value != nullptr) {
    const std::string text = value;
    std::size_t start = 0;
    while (start <= text.size()) {
      std::size_t colon = text.find(':', start);
      if (colon == std::string::npos) colon = text.size();
      patterns.push_back(text.substr(start, colon - start));
      start = colon + 1;
    }
  }
  return VirtualTapeNames(patterns);
}

bool VirtualTapeNames::covers(const std::string& resolved) const {
  for (const Pattern& p : patterns_) {
    if (p.whole_path ? ::fnmatch(p.text.c_str(), resolved.c_str(), FNM_PATHNAME) == 0
                     : ::fnmatch(p.text.c_str(), last_component(resolved).c_str(), 0) == 0)
      return true;
  }
  return false;
}

VirtualTapeNames virtual_tape_names(const OpenOptions& options) {
  return options.virtual_tapes ? VirtualTapeNames(*options.virtual_tapes)
                               : VirtualTapeNames::from_environment();
}

bool made_virtual_tape(int dir_fd, const std::string& name, int flags) {
  const bool follow = (flags & O_NOFOLLOW) == 0;
  const std::string image = dir_fd == AT_FDCWD && follow ? after_symlinks(name) : name;
  return carries_mark(dir_fd, name, follow) || drive_state_beside(dir_fd, image);
}

bool opens_virtual_tape(const std::string& name, int flags, bool found, const struct stat& st,
                        const OpenOptions& options) {
  if (found && !S_ISREG(st.st_mode)) return false;
  if (found && made_virtual_tape(options.dir_fd, name, flags)) return true;
  const VirtualTapeNames names = virtual_tape_names(options);
  return !names.empty() && names.covers(reached_path(options.dir_fd, name, (flags & O_NOFOLLOW) == 0));
}

bool is_virtual_tape(const std::string& name, const OpenOptions& options) {
  if (opens_remote(name, options) || (name == "-" && options.dir_fd == AT_FDCWD)) return false;
  struct stat st {};
  const bool found = ::fstatat(options.dir_fd, name.c_str(), &st, 0) == 0;
  return opens_virtual_tape(name, 0, found, st, options);
}

void mark_virtual_tape(int fd) {
  if (::fgetxattr(fd, kVirtualTapeAttribute, nullptr, 0) >= 0) return;
  // A file system without user attributes, or an image we may not change:
  // the drive state beside it is the mark there.
  (void)::fsetxattr(fd, kVirtualTapeAttribute, "1", 1, 0);
}

}  // namespace tk
