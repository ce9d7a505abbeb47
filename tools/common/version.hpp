// The suite's one version: the file VERSION at the top of the tree, which the
// Makefile hands to version.cpp alone, so a new version rebuilds one file.
#pragma once

#include <string>
#include <string_view>

namespace tk {

// "0.3.0".
std::string_view tapekit_version();

// What `PROGRAM --version` prints: "PROGRAM (tapekit) 0.3.0\n".
std::string version_line(std::string_view program);

}  // namespace tk
