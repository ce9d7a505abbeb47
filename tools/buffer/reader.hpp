// buffer's reader process.
#pragma once

#include <functional>
#include <memory>

#include "../../lib/process.hpp"
#include "../../lib/ring/ring.hpp"
#include "../../lib/tape/tape.hpp"
#include "options.hpp"
#include "report.hpp"
#include "run_state.hpp"

namespace tk::buffer {

// The reader's loop, in the parent after the fork: fills the ring from
// `input` until it ends (input_ended is set then), waits for the writer
// and returns the run's exit status. A null `input` (-o came before -i) is
// opened once the writer has its output, and handed to `opened` then.
int read_input(Ring& ring, RunState& run, std::unique_ptr<Tape> input, const Options& options, Child& writer,
               Clock::time_point& input_ended,
               const std::function<void(const Tape&)>& opened);

}  // namespace tk::buffer
