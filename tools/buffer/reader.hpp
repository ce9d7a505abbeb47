// buffer's reader process.
#pragma once

#include <memory>

#include "../../lib/process.hpp"
#include "../../lib/ring/ring.hpp"
#include "../../lib/tape/tape.hpp"
#include "options.hpp"
#include "report.hpp"

namespace tk::buffer {

// The reader's loop, in the parent after the fork: fills the ring from
// `input` until it ends (input_ended is set then), waits for the writer
// and returns the run's exit status.
int read_input(Ring& ring, std::unique_ptr<Tape> input, const Options& options, Child& writer,
               Clock::time_point& input_ended);

}  // namespace tk::buffer
