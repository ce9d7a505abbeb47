// buffer's --next-volume command, run the same way for output volumes (at a
// full medium) and input volumes (at the end of a volume's data).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tk::buffer {

// Runs `command` with /bin/sh, its standard input /dev/null and its standard
// output our standard error, so it can never read from or write into the
// data stream. As tar's -F script gets TAR_VOLUME, it gets BUFFER_VOLUME
// (the volume wanted next), BUFFER_BYTES (bytes moved so far) and
// `name_variable` (BUFFER_OUTPUT or BUFFER_INPUT) set to `name`. Returns
// the wait status.
int run_volume_command(const std::string& command, std::size_t volume, std::uint64_t bytes,
                       const char* name_variable, const std::string& name);

}  // namespace tk::buffer
