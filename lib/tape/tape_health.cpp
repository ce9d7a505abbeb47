// Tape::health_data where nothing can answer: the backends that reach a
// drive (st, a virtual tape, tapekit's rmt) override it.
#include <cerrno>

#include "../scsi/sg_io.hpp"
#include "tape.hpp"

namespace tk {

std::vector<std::uint8_t> Tape::health_data(scsi::HealthQuery query) {
  throw scsi::ScsiError(ENOTTY, scsi::Refusal::not_scsi, scsi::health_cdb(query).what,
                        name() + " is not a tape drive: it cannot report drive health");
}

}  // namespace tk
