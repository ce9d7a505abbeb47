// SIGINT, SIGTERM and SIGHUP as requests to stop: the program ends its work
// tidily (tk::request_stop makes blocking calls give up) instead of dying
// with data half-written.
#pragma once

namespace tk {

// Installs the handlers without SA_RESTART, so that a read or write blocked
// on a slow pipe, a socket or a tape returns EINTR and the program can stop.
void catch_stop_signals();

// If a stop signal arrived, dies by it with the default action, so that the
// caller (a shell, a pipeline) sees the signal and not an exit status.
void die_by_stop_signal();

}  // namespace tk
