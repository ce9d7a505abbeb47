// Opening a drive that is still loading. st's blocking open waits in the
// kernel until the tape is ready: an LTO load and calibration takes up to a
// minute or two, a rewind from the end of the tape about as long. The wait
// is the drive's, not a hung program: on a terminal it is said every 10 s,
// and it ends only at --open-timeout (TAPEKIT_OPEN_TIMEOUT), off by
// default, as for a remote drive (remote_tape.cpp).
#pragma once

#include <string>

#include "../io.hpp"

namespace tk {

// The option when it is set (not negative), else the environment's
// `variable`, else `fallback`; at most max_connect_timeout seconds. A value
// in the environment that is no number of seconds is an error (EINVAL),
// never a silent default.
int timeout_seconds(int option, const char* variable, int fallback);

// Opens `path` (relative to dir_fd) as open_file_at does. Unless flags has
// O_NONBLOCK, the open runs in a thread of its own: every 10 s that it has
// not returned, "waiting for PATH to open, N s" goes to standard error when
// that is a terminal, and after timeout_s seconds (0: never) the wait ends
// with ETIMEDOUT, naming the limit; the open left behind closes what it
// gets once it returns.
Fd open_device_waiting(int dir_fd, const std::string& path, int flags, int timeout_s);

}  // namespace tk
