#include "path.hpp"

#include <climits>
#include <sys/stat.h>
#include <unistd.h>

namespace tk {

std::string directory_of(const std::string& name) {
  std::size_t slash = name.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : name.substr(0, slash);
}

std::string last_component(const std::string& name) {
  std::size_t slash = name.rfind('/');
  return slash == std::string::npos ? name : name.substr(slash + 1);
}

std::string after_symlinks(std::string name) {
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (::lstat(name.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return name;
    char target[PATH_MAX];
    ssize_t n = ::readlink(name.c_str(), target, sizeof target - 1);
    if (n <= 0) return name;
    std::string to(target, static_cast<std::size_t>(n));
    name = to.front() == '/' ? to : directory_of(name) + "/" + to;
  }
  return name;
}

std::string descriptor_path(int fd) {
  char name[PATH_MAX];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  ssize_t n = ::readlink(link.c_str(), name, sizeof name - 1);
  if (n <= 0 || name[0] != '/') return {};
  return std::string(name, static_cast<std::size_t>(n));
}

}  // namespace tk
