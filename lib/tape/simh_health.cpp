// What a virtual tape's drive answers to mt's health queries, as an LTO
// drive would, from the image and the cartridge memory its state keeps.
//
// TapeAlert flags are raised (in simh_tape.cpp) where a drive raises them:
// 3 (Hard error) and 5 (Read failure) by a read that meets a damaged
// record, and 9 (Write protect) by a write refused for protection. Early
// warning raises none: it is a position (EOT in the status, then ENOSPC),
// and 19 (Nearing media life) on a real drive means the cartridge is worn
// out, which alert rules must not learn to ignore. Reading the TapeAlert
// page clears the flags, as SSC-4's default for the page does.
#include <algorithm>

#include "../scsi/page_builder.hpp"
#include "../scsi/pages.hpp"
#include "simh_internal.hpp"

namespace tk {
namespace {

std::uint32_t capacity_mib(std::uint64_t bytes) {
  // A figure the page cannot hold saturates one short of "no limit".
  return static_cast<std::uint32_t>(
      std::min<std::uint64_t>(bytes >> 20, scsi::no_capacity_limit_mib - 1));
}

}  // namespace

// Partition 0 from the configured capacity and the image's bytes; an
// image without a capacity saturates both fields (pages.hpp).
std::vector<std::uint8_t> simh_capacity_page(const DriveState& state, std::uint64_t image_bytes) {
  if (state.capacity == 0)
    return scsi::build_tape_capacity_page(scsi::no_capacity_limit_mib, scsi::no_capacity_limit_mib);
  const std::uint64_t used = std::min(image_bytes, state.capacity);
  return scsi::build_tape_capacity_page(capacity_mib(state.capacity - used), capacity_mib(state.capacity));
}

// The MAM attributes in identifier order (SPC-4 6.17.2), each with its
// standard size; what the state never knew is left out.
std::vector<std::uint8_t> simh_attribute_list(const DriveState& state) {
  namespace mam = scsi::mam;
  scsi::AttributeList list;
  if (state.memory) {
    list.add_binary(mam::load_count, state.load_count, 8);
    list.add_binary(mam::mib_written_in_life, state.bytes_written >> 20, 8);
    list.add_binary(mam::mib_read_in_life, state.bytes_read >> 20, 8);
  }
  list.add_ascii(mam::manufacturer, "TAPEKIT", 8);
  if (!state.serial.empty()) list.add_ascii(mam::serial_number, state.serial, 32);
  list.add_binary(mam::density_code, state.density, 1);
  if (!state.manufactured.empty()) list.add_ascii(mam::manufacture_date, state.manufactured, 8);
  list.add_binary(mam::medium_type, 0x00, 1);  // a data cartridge
  if (!state.barcode.empty()) list.add_ascii(mam::barcode, state.barcode, 32);
  return list.bytes();
}

}  // namespace tk
