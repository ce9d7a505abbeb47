// buffer's --next-volume command, run the same way for output volumes (at a
// full medium) and input volumes (at the end of a volume's data).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "../../lib/tape/tape.hpp"
#include "options.hpp"

namespace tk::buffer {

// Runs `command` with /bin/sh, its standard input /dev/null and its standard
// output our standard error, so it can never read from or write into the
// data stream. As tar's -F script gets TAR_VOLUME, it gets BUFFER_VOLUME
// (the volume wanted next), BUFFER_BYTES (bytes moved so far) and
// `name_variable` (BUFFER_OUTPUT or BUFFER_INPUT) set to `name`. Returns
// the wait status.
int run_volume_command(const std::string& command, std::size_t volume, std::uint64_t bytes,
                       const char* name_variable, const std::string& name);

// Which side changes volumes: the reader's input at the end of a volume's
// data, the writer's output at a full medium.
enum class VolumeSide { input, output };

// One side's change to volume `volume` (the next), `bytes` having moved so
// far: says so, runs the --next-volume command and opens the volume through
// the same function as the first (open_input, open_output), so that it is
// prepared alike and a failure to open it reads as the first one's would,
// after a line naming the volume. `current` is the volume's name as the
// first open gave it. Throws ExactExit(kExitRuntime) with the lines that
// say why when the command fails or the volume cannot be opened (or made
// ready); Interrupted when a stop came.
std::unique_ptr<Tape> open_next_volume(const Options& o, VolumeSide side, std::size_t volume,
                                       std::uint64_t bytes, const std::string& current);

}  // namespace tk::buffer
