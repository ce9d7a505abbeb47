// The SCSI commands tapekit sends a drive: a fixed list of read-only
// commands (SPC-4, SSC-4), each built here and nowhere else.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace tk::scsi {

// One command descriptor block, and what it asks for in words ("LOG SENSE
// page 0x2e"), for messages.
struct Cdb {
  std::array<std::uint8_t, 16> bytes{};
  std::size_t size = 0;
  std::string what;
  std::uint32_t allocation_length = 0;

  std::span<const std::uint8_t> span() const { return {bytes.data(), size}; }
};

// Log pages tapekit reads (SPC-4 7.3, SSC-4 8.2).
inline constexpr std::uint8_t supported_log_pages = 0x00;
inline constexpr std::uint8_t tapealert_page = 0x2e;
inline constexpr std::uint8_t tape_capacity_page = 0x31;

// SECURITY PROTOCOL IN: tape data encryption (SSC-4 8.5), its status page.
inline constexpr std::uint8_t tape_encryption_protocol = 0x20;
inline constexpr std::uint16_t data_encryption_status_page = 0x0020;

// INQUIRY, standard data (SPC-4 6.6).
Cdb inquiry(std::uint16_t allocation_length = 96);
// INQUIRY of one vital product data page (EVPD 1).
Cdb inquiry_vpd(std::uint8_t page, std::uint16_t allocation_length = 0xff);
// The VPD pages tapekit reads (SPC-4 7.8, SSC-4 8.4).
inline constexpr std::uint8_t supported_vpd_pages_page = 0x00;
inline constexpr std::uint8_t unit_serial_number_page = 0x80;
inline constexpr std::uint8_t manufacturer_serial_number_page = 0xb1;
inline constexpr std::uint8_t tapealert_supported_page = 0xb2;
// LOG SENSE of the current cumulative values of one page (SPC-4 6.8).
Cdb log_sense(std::uint8_t page, std::uint16_t allocation_length = 0x2000);
// READ ATTRIBUTE, service action ATTRIBUTE VALUES, partition 0, from the
// first attribute (SPC-4 6.17).
Cdb read_attribute(std::uint32_t allocation_length = 0x2000);
// SECURITY PROTOCOL IN (SPC-4 6.40).
Cdb security_protocol_in(std::uint8_t protocol, std::uint16_t specific,
                         std::uint32_t allocation_length = 0x2000);
// REQUEST SENSE (SPC-4 6.39).
Cdb request_sense(std::uint8_t allocation_length = 96);

// The questions of a drive-health report, one fixed command each. A remote
// client asks tapekit's rmt by this number (lib/rmt/protocol.hpp, i29811);
// the server builds the command itself: no CDB ever crosses the wire.
enum class HealthQuery : int {
  inquiry = 0,     // INQUIRY, standard data
  tapealert = 1,   // LOG SENSE page 0x2e
  capacity = 2,    // LOG SENSE page 0x31
  attributes = 3,  // READ ATTRIBUTE (the cartridge memory)
  encryption = 4,  // SECURITY PROTOCOL IN 0x20, page 0x0020
  unit_serial_number = 5,  // INQUIRY VPD page 0x80
  supported_vpd_pages = 6,         // INQUIRY VPD page 0x00
  manufacturer_serial_number = 7,  // INQUIRY VPD page 0xb1
  tapealert_supported = 8,         // INQUIRY VPD page 0xb2
};
inline constexpr int health_query_count = 9;
Cdb health_cdb(HealthQuery query);
// The same command with another allocation length, at most
// max_allocation_length (LOG SENSE has 16 bits for it).
Cdb health_cdb(HealthQuery query, std::uint32_t allocation_length);
inline constexpr std::uint32_t max_allocation_length = 0xffff;

}  // namespace tk::scsi
