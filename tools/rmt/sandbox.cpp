// Landlock through its raw system calls (glibc has no wrappers).
#include "sandbox.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../../lib/io.hpp"

namespace tk::rmt_server {
namespace {

constexpr std::uint64_t file_rights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                                      LANDLOCK_ACCESS_FS_READ_FILE;
constexpr std::uint64_t v1_rights =
    file_rights | LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR |
    LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |
    LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
    LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
// Creating, reading and writing files beneath a directory: what an allowed
// image that does not exist yet, and its sidecar state file, need.
constexpr std::uint64_t parent_rights = file_rights | LANDLOCK_ACCESS_FS_MAKE_REG |
                                        LANDLOCK_ACCESS_FS_REMOVE_FILE;

bool add_rule(int ruleset, const std::string& path, std::uint64_t rights) {
  Fd fd(::open(path.c_str(), O_PATH | O_CLOEXEC));
  if (!fd.valid()) return errno == ENOENT;  // nothing there to allow yet
  landlock_path_beneath_attr attr{};
  attr.allowed_access = rights;
  attr.parent_fd = fd.get();
  return ::syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &attr, 0) == 0;
}

}  // namespace

std::string confine(const SandboxRules& rules) {
  long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1) return std::string("no landlock: ") + std::strerror(errno);
  std::uint64_t handled = v1_rights;
  if (abi >= 2) handled |= LANDLOCK_ACCESS_FS_REFER;
  landlock_ruleset_attr attr{};
  attr.handled_access_fs = handled;
  Fd ruleset(static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0)));
  if (!ruleset.valid()) return std::string("no landlock: ") + std::strerror(errno);
  bool ok = true;
  for (const auto& t : rules.trees) ok = add_rule(ruleset.get(), t, handled) && ok;
  for (const auto& f : rules.files) ok = add_rule(ruleset.get(), f, file_rights) && ok;
  for (const auto& p : rules.file_parents) ok = add_rule(ruleset.get(), p, parent_rights) && ok;
  if (!ok) return std::string("no landlock: rule: ") + std::strerror(errno);
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      ::syscall(SYS_landlock_restrict_self, ruleset.get(), 0) != 0)
    return std::string("no landlock: ") + std::strerror(errno);
  return "landlock";
}

}  // namespace tk::rmt_server
