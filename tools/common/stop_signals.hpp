// SIGINT, SIGTERM and SIGHUP as requests to stop: the program ends its work
// tidily (tk::request_stop makes blocking calls give up) instead of dying
// with data half-written; and SIGXFSZ, which is ignored.
#pragma once

namespace tk {

// Installs the handlers without SA_RESTART, so that a read or write blocked
// on a slow pipe, a socket or a tape returns EINTR and the program can stop.
void catch_stop_signals();

// Ignores SIGXFSZ, so that a write past the file size limit (ulimit -f)
// fails with EFBIG, which the program reports as a full medium with the
// bytes that reached it, instead of killing it mid-write without a word.
// Children started through lib/process get the default action back.
void ignore_file_size_signal();

// If a stop signal arrived, dies by it with the default action, so that the
// caller (a shell, a pipeline) sees the signal and not an exit status.
void die_by_stop_signal();

// Dies by SIGPIPE with its default action, as cat or dd do when the reader
// of their standard output went away: quiet in a pipeline, and the same
// status (128+13 to a shell) every time, not an exit status.
[[noreturn]] void die_of_broken_pipe();

}  // namespace tk
