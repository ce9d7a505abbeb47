// Names of files, taken apart as open(2) reads them.
#pragma once

#include <string>

namespace tk {

// The directory part of name: "." for a bare name, "/" for one in the root.
std::string directory_of(const std::string& name);

// The last component of name (after the last "/").
std::string last_component(const std::string& name);

// The name a chain of symlinks ends at, as open(2) follows them (at most
// 40, as the kernel): for a dangling link, the name the open would create.
// A name that is no symlink is returned as it is.
std::string after_symlinks(std::string name);

// The absolute name the open descriptor fd was reached by (its
// /proc/self/fd link), or "" where that is unknown.
std::string descriptor_path(int fd);

}  // namespace tk
