#include "same_file.hpp"

#include <cerrno>
#include <climits>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../../lib/path.hpp"

namespace tk {
namespace {

FileIdentity of_stat(const struct stat& st) {
  FileIdentity id;
  id.known = id.exists = true;
  id.dev = st.st_dev;
  id.ino = st.st_ino;
  id.mode = st.st_mode;
  id.rdev = st.st_rdev;
  return id;
}

// A name that is not there yet: where the open would create it, after the
// dangling symlinks it passes through (as open(O_CREAT) follows them).
FileIdentity not_yet_there(const std::string& given) {
  const std::string name = after_symlinks(given);
  struct stat dir {};
  if (::stat(directory_of(name).c_str(), &dir) != 0) return {};
  FileIdentity id;
  id.known = true;
  id.dev = dir.st_dev;
  id.ino = dir.st_ino;
  id.last = last_component(name);
  return id;
}

}  // namespace

bool FileIdentity::regular() const noexcept { return exists && S_ISREG(mode); }

bool FileIdentity::null_device() const noexcept {
  return exists && S_ISCHR(mode) && rdev == ::makedev(1, 3);
}

FileIdentity identify_fd(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return {};
  return of_stat(st);
}

FileIdentity identify_name(const std::string& name, int standard_fd, const OpenOptions& options) {
  if (name.empty() || name == "-") return identify_fd(standard_fd);
  if (opens_remote(name, options)) {
    FileIdentity id;
    id.known = true;
    id.remote = name;
    return id;
  }
  struct stat st {};
  if (::stat(name.c_str(), &st) == 0) return of_stat(st);
  if (errno != ENOENT) return {};
  return not_yet_there(name);
}

bool same_file(const FileIdentity& a, const FileIdentity& b) noexcept {
  if (!a.known || !b.known) return false;
  if (!a.remote.empty() || !b.remote.empty()) return a.remote == b.remote;
  return a.exists == b.exists && a.dev == b.dev && a.ino == b.ino && a.last == b.last;
}

bool output_is_input(const std::string& input, const std::string& output,
                     const OpenOptions& options) {
  if (output.empty() || output == "-") return false;
  FileIdentity out = identify_name(output, 1, options);
  return out.regular() && same_file(identify_name(input, 0, options), out);
}

std::string output_is_input_text(const std::string& program, const std::string& output) {
  return program + ": " + output + ": input file is output file; opening it would empty it\n";
}

}  // namespace tk
