// The bytes a drive answers to the commands of cdb.hpp, built from the
// layouts SPC-4 and SSC-4 give: what a backend that emulates a drive (the
// virtual tape) returns, so that the parsers of pages.hpp read it as they
// read a real drive's.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace tk::scsi {

// Standard INQUIRY data (SPC-4 6.6.2) of a sequential-access device with a
// removable medium; the ASCII fields are padded with spaces or cut.
std::vector<std::uint8_t> build_inquiry(std::string_view vendor, std::string_view product,
                                        std::string_view revision);

// An INQUIRY VPD page (SPC-4 7.8.1) of a sequential-access device: the
// header, then body.
std::vector<std::uint8_t> build_vpd_page(std::uint8_t page, const std::vector<std::uint8_t>& body);

// VPD page 0xB2, TapeAlert Supported Flags (SSC-4 8.4.4): flag n supported
// when bit n-1 of flags is set.
std::vector<std::uint8_t> build_tapealert_supported_page(std::uint64_t flags);

// LOG SENSE page 0x2E (SSC-4 8.2.3): 64 parameters, flag n's value 1 when
// bit n-1 of flags is set.
std::vector<std::uint8_t> build_tapealert_page(std::uint64_t flags);

// LOG SENSE page 0x31 (SSC-4 8.2.4) for one partition (0): remaining and
// maximum capacity in MiB.
std::vector<std::uint8_t> build_tape_capacity_page(std::uint32_t remaining_mib,
                                                   std::uint32_t maximum_mib);

// READ ATTRIBUTE's parameter data (SPC-4 6.17.2), one attribute at a time.
class AttributeList {
 public:
  // A binary attribute of size bytes, big-endian.
  void add_binary(std::uint16_t id, std::uint64_t value, std::size_t size);
  // An ASCII attribute of size bytes, left-aligned and padded with spaces.
  void add_ascii(std::uint16_t id, std::string_view text, std::size_t size);
  // The reply: AVAILABLE DATA, then the attributes in the order added.
  std::vector<std::uint8_t> bytes() const;

 private:
  void add_header(std::uint16_t id, unsigned format, std::size_t size);
  std::vector<std::uint8_t> list_;
};

}  // namespace tk::scsi
