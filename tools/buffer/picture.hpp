// The end of a recorded run (the advice, the picture) and --plot-from.
#pragma once

#include "options.hpp"
#include "record.hpp"

namespace tk::buffer {

// After the run: the advice on stderr (an "advice" object under --json),
// and --plot's picture. A picture that cannot be written is said once;
// it never changes the run's exit status.
void finish_recorded_run(const RunRecord& record, const Options& options);

// --plot-from RECORD --plot FILE.svg: draws a recorded run, runs nothing.
// Returns the exit status; a record that cannot be read throws Error.
int draw_record(const Options& options);

}  // namespace tk::buffer
