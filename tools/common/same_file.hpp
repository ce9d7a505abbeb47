// Whether two of a tool's names are one file. Names are compared by what
// opening them reaches (device and inode), never by their spelling: a
// symlink, a hard link, ./x, /dev/stdout and /proc/self/fd/1 are all caught.
#pragma once

#include <string>
#include <sys/types.h>

#include "../../lib/tape/tape.hpp"

namespace tk {

// What a name is, or would be once created.
struct FileIdentity {
  bool known = false;    // false: nothing to compare (a remote name, a directory not there)
  bool exists = false;   // the file is there; else dev/ino are the directory it would be made in
  dev_t dev = 0;
  ino_t ino = 0;
  std::string last;      // not there yet: the name it would get in that directory
  mode_t mode = 0;       // the file's type, when it exists
  dev_t rdev = 0;
  std::string remote;    // a host:path name, compared as it is spelled

  bool regular() const noexcept;
  bool null_device() const noexcept;  // /dev/null: any number of ends may share it
};

// The identity of `name` as opening it would reach it (following every
// symlink, dangling ones to where they would create the file); "-" or ""
// is the descriptor `standard_fd`.
FileIdentity identify_name(const std::string& name, int standard_fd, const OpenOptions& options);
FileIdentity identify_fd(int fd);

// One file (or one remote name), reached twice.
bool same_file(const FileIdentity& a, const FileIdentity& b) noexcept;

// True when `output` names the regular file that `input` names ("-" or
// empty: standard input), here on this machine. Opening it with O_TRUNC
// would empty the input before a byte of it is read (dd and buffer 1.19 do
// so silently; GNU cat refuses: "input file is output file").
bool output_is_input(const std::string& input, const std::string& output,
                     const OpenOptions& options);

// "PROGRAM: OUTPUT: input file is output file; ...", one line; output as
// the refusal names it ("-o out", "standard output").
std::string output_is_input_text(const std::string& program, const std::string& output);

}  // namespace tk
