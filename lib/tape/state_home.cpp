#include "state_home.hpp"

#include <cerrno>
#include <climits>
#include <dirent.h>
#include <fcntl.h>
#include <memory>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "../error.hpp"
#include "../path.hpp"
#include "simh_tape.hpp"

namespace tk {
namespace {

constexpr std::string_view kStateSuffix = ".state";

// The directory, readable when it may be (its fsync needs that), else
// only as a place to name files in.
Fd open_directory(int base, const std::string& directory, const std::string& image) {
  int fd = retry_eintr(
      [&] { return ::openat(base, directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); });
  if (fd == -1 && errno == EACCES)
    fd = ::openat(base, directory.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd == -1) throw_errno("open " + image + " (its directory " + directory + ")");
  return Fd(fd);
}

bool exists_at(int dir, const std::string& name) {
  struct stat st {};
  return ::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

// Another name of the image in its directory that has a state beside it.
std::string sibling_with_state(int dir, const struct stat& image) {
  int fd = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd == -1) return {};
  std::unique_ptr<DIR, int (*)(DIR*)> listing(::fdopendir(fd), ::closedir);
  if (!listing) {
    ::close(fd);
    return {};
  }
  while (const dirent* entry = ::readdir(listing.get())) {
    if (entry->d_ino != image.st_ino) continue;
    struct stat st {};
    if (::fstatat(dir, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_dev != image.st_dev ||
        st.st_ino != image.st_ino)
      continue;
    std::string state = std::string(entry->d_name) + std::string(kStateSuffix);
    if (exists_at(dir, state)) return entry->d_name;
  }
  return {};
}

// The name the image's attribute gives, when that name is still the image
// and has its state beside it.
std::string named_by_attribute(int image_fd, const struct stat& image) {
  char value[PATH_MAX];
  ssize_t n = ::fgetxattr(image_fd, kStateBesideAttribute, value, sizeof value - 1);
  if (n <= 0) return {};
  std::string name(value, static_cast<std::size_t>(n));
  struct stat st {};
  if (name.front() != '/' || ::lstat(name.c_str(), &st) != 0 || st.st_dev != image.st_dev ||
      st.st_ino != image.st_ino || ::lstat((name + std::string(kStateSuffix)).c_str(), &st) != 0)
    return {};
  return name;
}

StateHome home_beside(Fd dir, const std::string& name) {
  StateHome home;
  home.dir = std::move(dir);
  home.image = last_component(name);
  home.name = home.image + std::string(kStateSuffix);
  home.shown = name + std::string(kStateSuffix);
  return home;
}

}  // namespace

StateHome find_state_home(int dir_fd, const std::string& path, int image_fd) {
  struct stat image {};
  if (::fstat(image_fd, &image) == -1) throw_errno("stat " + path);
  const std::string name = dir_fd == AT_FDCWD ? after_symlinks(path) : path;
  Fd dir = open_directory(dir_fd, directory_of(name), path);
  struct stat here {};
  if (::fstatat(dir.get(), last_component(name).c_str(), &here, AT_SYMLINK_NOFOLLOW) != 0 ||
      here.st_dev != image.st_dev || here.st_ino != image.st_ino)
    throw Error(EAGAIN, "open " + path + " (the image was moved or replaced while it was opened)");
  StateHome home = home_beside(std::move(dir), name);
  if (image.st_nlink <= 1 || exists_at(home.dir.get(), home.name)) {
    remember_state_home(image_fd, home);
    return home;
  }
  std::string sibling = sibling_with_state(home.dir.get(), image);
  if (!sibling.empty()) {
    const std::string directory = directory_of(name);
    const std::string shown = name.find('/') == std::string::npos ? sibling : directory + "/" + sibling;
    return home_beside(std::move(home.dir), shown);
  }
  // Confined opens (rmt's) never leave their directory for another.
  if (dir_fd == AT_FDCWD) {
    std::string elsewhere = named_by_attribute(image_fd, image);
    if (!elsewhere.empty())
      return home_beside(open_directory(AT_FDCWD, directory_of(elsewhere), path), elsewhere);
  }
  if (image.st_size > 0)
    throw DamagedImage("open " + path,
                       "it is one of " + std::to_string(image.st_nlink) +
                           " names (hard links) of one image, and no name of it here has the "
                           "drive state that keeps its position: open it by the name whose .state "
                           "is beside it, or give the image one name",
                       EMLINK);
  return home;
}

void remember_state_home(int image_fd, const StateHome& home) {
  const std::string directory = descriptor_path(home.dir.get());
  if (directory.empty()) return;
  const std::string name = (directory == "/" ? "" : directory) + "/" + home.image;
  char current[PATH_MAX];
  ssize_t have = ::fgetxattr(image_fd, kStateBesideAttribute, current, sizeof current);
  if (have == static_cast<ssize_t>(name.size()) && name.compare(0, name.size(), current, name.size()) == 0)
    return;
  // A file system without user attributes, or an image we may not change:
  // a hard link elsewhere is then refused, as it was.
  (void)::fsetxattr(image_fd, kStateBesideAttribute, name.data(), name.size(), 0);
}


}  // namespace tk
