#include "version.hpp"

#ifndef TAPEKIT_VERSION
#error "TAPEKIT_VERSION is set by the Makefile from the file VERSION"
#endif

namespace tk {

std::string_view tapekit_version() { return TAPEKIT_VERSION; }

std::string version_line(std::string_view program) {
  return std::string(program) + " (tapekit) " + std::string(tapekit_version()) + "\n";
}

}  // namespace tk
