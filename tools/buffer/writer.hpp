// buffer's writer process.
#pragma once

#include <sys/types.h>

#include "../../lib/ring/ring.hpp"
#include "digest_channel.hpp"
#include "options.hpp"
#include "report.hpp"

namespace tk::buffer {

// The writer's life after the fork: opens the output and the tees, drains
// the ring into them until the reader's input ends, and returns its exit
// status. `reader` is the parent's pid, watched for its death.
int writer_process(Ring& ring, const Options& options, Clock::time_point start, pid_t reader,
                   DigestChannel* digest_channel);

}  // namespace tk::buffer
