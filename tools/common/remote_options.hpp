// The options every client program (buffer, reblock, mt) takes for
// [user@]host:path names, written once: man/tapekit-remote.7 describes them.
#pragma once

#include "../../lib/tape/tape.hpp"
#include "option_table.hpp"

namespace tk {

// --rsh-command, --rmt-command, --force-local, --connect-timeout,
// --open-timeout, --plain-remote and --streams, setting remote's fields. A
// bad value throws UsageError naming the option, the value and what it takes.
OptionTable remote_options(OpenOptions& remote);

}  // namespace tk
