// Opening an allowed name: confined beneath its --allow entry, never a FIFO
// there, never the server's own connection.
#include "opener.hpp"

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../lib/error.hpp"

namespace tk::rmt_server {
namespace {

// What a restricted server opens: files and devices. A FIFO would block the
// open, then every read, for as long as no one writes to it.
bool openable(mode_t mode) { return S_ISREG(mode) || S_ISCHR(mode); }

void check_type(mode_t mode, const std::string& name) {
  if (S_ISDIR(mode)) throw Error(EISDIR, "open " + name);
  if (!openable(mode)) throw Error(EACCES, "open " + name + ": not a file or character device");
}

// The directory d.beneath lies in, opened beneath d.root; the last component
// of d.beneath goes to *last.
Fd open_directory(const OpenDecision& d, std::string* last) {
  Fd root = open_file(d.root, O_PATH | O_DIRECTORY | O_NOFOLLOW);
  auto slash = d.beneath.rfind('/');
  if (slash == std::string::npos) {
    *last = d.beneath;
    return root;
  }
  *last = d.beneath.substr(slash + 1);
  try {
    return open_beneath(root.get(), d.beneath.substr(0, slash), O_PATH | O_DIRECTORY);
  } catch (const Error& e) {
    // A link renamed in since the check, leading out (or, without openat2,
    // any link): the name no longer means what was allowed.
    if (e.errnum() == EXDEV || e.errnum() == ELOOP)
      throw Error(EACCES, "open " + d.path + ": leaves the allowed tree");
    throw;
  }
}

// What an unrestricted name leads to; false when nothing is there yet (a
// file to be created: the open reports what is wrong). A magic link on the
// way is refused: it reaches descriptors, this server's or another
// process's, rather than files.
bool probe(const std::string& path, struct stat* st) {
  try {
    Fd fd = open_no_magic_links(AT_FDCWD, path, O_PATH);
    return ::fstat(fd.get(), st) == 0;
  } catch (const Error& e) {
    if (e.errnum() == ELOOP) throw Error(EACCES, "open " + path + ": magic link refused");
    return false;
  }
}

}  // namespace

OwnStdio::OwnStdio(std::initializer_list<int> fds) {
  for (int fd : fds) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) continue;
    if (S_ISCHR(st.st_mode) && ::isatty(fd) == 0) continue;
    ids_.push_back({st.st_dev, st.st_ino});
  }
}

bool OwnStdio::is_own(dev_t dev, ino_t ino) const noexcept {
  for (const auto& id : ids_)
    if (id.dev == dev && id.ino == ino) return true;
  return false;
}

OpenedTape open_decided(const OpenDecision& d, OpenOptions options, const OwnStdio& own) {
  auto refuse_own = [&](const struct stat& st) {
    if (own.is_own(st.st_dev, st.st_ino))
      throw Error(EACCES, "open " + d.path + ": the server's own standard input or output");
  };
  OpenedTape out;
  std::string name = d.path;
  struct stat st {};
  if (!d.root.empty()) {
    out.directory = open_directory(d, &name);
    if (::fstatat(out.directory.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      if (S_ISLNK(st.st_mode))
        throw Error(EACCES, "open " + d.path + ": a link where the check found none");
      check_type(st.st_mode, d.path);
      refuse_own(st);
    } else if (errno != ENOENT) {
      throw_errno("open " + d.path);
    }
    options.dir_fd = out.directory.get();
  } else {
    if (probe(d.path, &st)) refuse_own(st);
  }
  options.force_local = true;  // the server never connects anywhere
  out.tape = open_tape(name, d.flags, options);
  // The same checks on what was opened: a FIFO or the connection renamed in
  // between is closed unread.
  int fd = out.tape->poll_fd();
  if (fd >= 0 && ::fstat(fd, &st) == 0) {
    if (!d.root.empty()) check_type(st.st_mode, d.path);
    refuse_own(st);
  }
  // A tape with records and no descriptor of its own to wait on is a
  // virtual tape: the image is its medium, its buffer ours.
  out.holds_writes = out.tape->keeps_records() && fd < 0;
  return out;
}

}  // namespace tk::rmt_server
