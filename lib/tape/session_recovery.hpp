// Completing a write session its writer never closed (killed, or its machine
// lost power), as the kernel's close completes a killed writer's file on st.
#pragma once

#include <cstdint>
#include <string>
#include <sys/stat.h>

#include "drive_state.hpp"

namespace tk {

// A file's modification time in nanoseconds, as the drive state keeps it.
std::int64_t mtime_ns(const struct stat& st) noexcept;
// The image's, -1 when fstat fails.
std::int64_t image_mtime_ns(int fd) noexcept;

// state was saved by a writer that never closed (state.writing), and fd is
// the image opened for reading and writing, its lock held. Walks from the
// saved position (an object boundary the writer had passed) to the end of
// the image; cuts off a record left cut short there (the writer's buffer
// reached the image only in part); writes the filemark its close would have
// written when the image ends in a record; and leaves the drive just past
// the end, as st leaves a closed writer. state.recovery says what was done.
// Throws Error naming the image when it cannot cut or write.
void complete_interrupted_session(int fd, std::uint64_t size, DriveState& state,
                                  const std::string& name);

}  // namespace tk
