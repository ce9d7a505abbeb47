// A private directory for a unit test's files on a disk where a virtual tape
// stages its writes, picked as on_disk in tests/test_helper.bash picks one.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <linux/magic.h>
#include <string>
#include <sys/statfs.h>
#include <system_error>

namespace tk_test {

// Whether dir is on ext2/3/4 (one magic) or xfs: the file systems whose
// reservations hold.
inline bool on_staging_file_system(const std::string& dir) {
  struct statfs fs {};
  if (::statfs(dir.c_str(), &fs) != 0) return false;
  return fs.f_type == EXT4_SUPER_MAGIC || fs.f_type == XFS_SUPER_MAGIC;
}

// Makes and returns a new directory named prefix-XXXXXX in $TMPDIR (else
// /tmp) when that is on such a file system, else in scratch/ of the build
// folder (build/, for build/bin/unit-tests or build/asan/bin/unit-tests), on
// the checkout's disk, as on_disk does. Staging tests would otherwise skip,
// or take their no-staging branch, on a tmpfs /tmp. Empty on failure.
inline std::string make_disk_dir(const std::string& prefix) {
  const char* tmpdir = std::getenv("TMPDIR");
  std::string base = tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
  if (!on_staging_file_system(base)) {
    std::error_code ec;
    std::filesystem::path build = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) return "";
    build = build.parent_path().parent_path();
    if (build.filename() == "asan") build = build.parent_path();
    std::filesystem::create_directories(build / "scratch", ec);
    if (ec) return "";
    base = (build / "scratch").string();
  }
  std::string dir = base + "/" + prefix + "-XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) return "";
  return dir;
}

}  // namespace tk_test
