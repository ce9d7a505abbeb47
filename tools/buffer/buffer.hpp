// buffer's engine: a reader process filling a shared ring of blocks and a
// writer process draining it, so a stall on one side never stops the other.
#pragma once

#include "options.hpp"

namespace tk::buffer {

// Exit statuses of buffer 1.19: 255 for anything before the two processes
// exist, 254 for anything after (including signals and a broken pipe).
enum Exit : int { kExitOk = 0, kExitSetup = 255, kExitRuntime = 254 };

// Opens input and output, creates the ring, forks the writer and runs the
// reader; returns the exit status. Runs inside tk::run_main.
int run(const Options& options);

}  // namespace tk::buffer
