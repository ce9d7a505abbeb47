// Helper threads that never take a signal.
#pragma once

#include <functional>
#include <thread>

namespace tk {

// Starts `body` in a thread with every signal blocked: a signal is for the
// thread whose blocking call it must interrupt (the main thread's write to
// a hung drive, its read of a stalled pipe), never for a helper that would
// take it and leave that call blocked. The caller's mask is as it was,
// also when the thread cannot be started (std::system_error).
std::thread thread_without_signals(std::function<void()> body);

}  // namespace tk
