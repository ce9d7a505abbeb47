// libFuzzer target: lib/scsi's parsers of what a drive returns (INQUIRY
// data, log pages 0x00, 0x2E and 0x31, READ ATTRIBUTE lists, the Data
// Encryption Status page, the unit serial number page, sense data, the
// reply lengths headers give), all fed the same bytes: a malformed
// reply must be a PageError, never a crash or a read out of bounds. Built
// and run by `make fuzz`; seeds in corpus/scsi_pages.
#include <cstddef>
#include <cstdint>
#include <span>

#include "../../lib/scsi/pages.hpp"

namespace {

template <class Fn>
void parse(Fn fn) {
  try {
    fn();
  } catch (const tk::scsi::PageError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace scsi = tk::scsi;
  std::span<const std::uint8_t> bytes(data, size);
  parse([&] { (void)scsi::parse_inquiry(bytes); });
  parse([&] { (void)scsi::parse_supported_log_pages(bytes); });
  parse([&] { (void)scsi::parse_tapealert_page(bytes); });
  parse([&] { (void)scsi::parse_tape_capacity_page(bytes); });
  parse([&] { (void)scsi::cartridge_from(scsi::parse_attributes(bytes)); });
  parse([&] { (void)scsi::parse_encryption_status(bytes); });
  parse([&] { (void)scsi::parse_unit_serial_number(bytes); });
  parse([&] { (void)scsi::parse_supported_vpd_pages(bytes); });
  parse([&] { (void)scsi::parse_manufacturer_serial_number(bytes); });
  parse([&] { (void)scsi::parse_tapealert_supported(bytes); });
  for (int q = 0; q < scsi::health_query_count; ++q)
    (void)scsi::whole_reply_length(static_cast<scsi::HealthQuery>(q), bytes);
  (void)scsi::parse_sense(bytes);
  return 0;
}
