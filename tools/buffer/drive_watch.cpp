#include "drive_watch.hpp"

#include <algorithm>

#include "../../lib/scsi/pages.hpp"

namespace tk::buffer {

namespace {

using Raw = std::vector<std::uint8_t>;

scsi::Bytes bytes_of(const Raw& data) { return {data.data(), data.size()}; }

}  // namespace

void DriveWatch::volume_started(Tape& output, std::uint64_t bytes_out, bool first) {
  if (!enabled_) return;
  // A new cartridge answers for itself: a refusal of the last one (none
  // loaded, say) is not this one's.
  capacity_answers_ = true;
  alerts_answer_ = true;
  read_alerts(output, first);
  sample_capacity(output, bytes_out, false);
}

bool DriveWatch::capacity_due() const {
  return enabled_ && capacity_answers_ && now_() >= next_sample_;
}

void DriveWatch::sample_capacity(Tape& output, std::uint64_t bytes_out, bool writes_in_flight) {
  if (!enabled_ || !capacity_answers_) return;
  next_sample_ = now_() + kSampleEvery;
  if (writes_in_flight) return;
  try {
    Raw page = output.health_data(scsi::HealthQuery::capacity);
    for (const scsi::PartitionCapacity& p : scsi::parse_tape_capacity_page(bytes_of(page)).partitions) {
      // The main partition: where a drive that is not partitioned writes.
      if (p.partition != 0 || !p.remaining_mib || !p.maximum_mib || *p.maximum_mib == 0) continue;
      // An image without a limit has no end to count down to.
      if (*p.maximum_mib == scsi::no_capacity_limit_mib) break;
      run_.set_output_capacity(std::min(*p.remaining_mib, *p.maximum_mib), *p.maximum_mib,
                                bytes_out);
      return;
    }
    capacity_answers_ = false;
  } catch (const Error&) {
    // A file, a pipe, another rmt, a drive without the page, or a reply
    // that cannot be read: no figure to show. Nothing is lost by asking no
    // more: nothing is asked with a write in flight, and a link that broke
    // fails the next write as it would have.
    capacity_answers_ = false;
  }
}

void DriveWatch::before_close(Tape& output) { read_alerts(output, false); }

void DriveWatch::read_alerts(Tape& output, bool before_run) {
  if (!enabled_ || !alerts_answer_) return;
  try {
    Raw page = output.health_data(scsi::HealthQuery::tapealert);
    run_.add_output_alerts(scsi::tapealert_mask(scsi::parse_tapealert_page(bytes_of(page)).flags),
                            before_run);
  } catch (const Error&) {
    alerts_answer_ = false;  // as for the capacity
  }
}

}  // namespace tk::buffer
