// Running the --next-volume command.
#include "volume_change.hpp"

#include <cstdlib>
#include <fcntl.h>

#include "../../lib/io.hpp"
#include "../../lib/process.hpp"

namespace tk::buffer {

int run_volume_command(const std::string& command, std::size_t volume, std::uint64_t bytes,
                       const char* name_variable, const std::string& name) {
  ::setenv("BUFFER_VOLUME", std::to_string(volume).c_str(), 1);
  ::setenv("BUFFER_BYTES", std::to_string(bytes).c_str(), 1);
  ::setenv(name_variable, name.c_str(), 1);
  Fd null = open_file("/dev/null", O_RDONLY);
  return run_shell(command, null.get(), 2);
}

}  // namespace tk::buffer
