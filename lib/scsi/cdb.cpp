// CDB builders for the commands of cdb.hpp; layouts from SPC-4 section 6.
#include "cdb.hpp"

#include <algorithm>

namespace tk::scsi {
namespace {

std::string hex_byte(unsigned value) {
  static constexpr char digits[] = "0123456789abcdef";
  return std::string("0x") + digits[(value >> 4) & 0xf] + digits[value & 0xf];
}

void put16(Cdb& c, std::size_t at, std::uint32_t value) {
  c.bytes[at] = static_cast<std::uint8_t>(value >> 8);
  c.bytes[at + 1] = static_cast<std::uint8_t>(value);
}

void put32(Cdb& c, std::size_t at, std::uint32_t value) {
  put16(c, at, value >> 16);
  put16(c, at + 2, value & 0xffff);
}

}  // namespace

Cdb inquiry(std::uint16_t allocation_length) {
  Cdb c;
  c.size = 6;
  c.what = "INQUIRY";
  c.bytes[0] = 0x12;
  put16(c, 3, allocation_length);
  c.allocation_length = allocation_length;
  return c;
}

Cdb inquiry_vpd(std::uint8_t page, std::uint16_t allocation_length) {
  Cdb c;
  c.size = 6;
  c.what = "INQUIRY VPD page " + hex_byte(page);
  c.bytes[0] = 0x12;
  c.bytes[1] = 0x01;  // EVPD
  c.bytes[2] = page;
  put16(c, 3, allocation_length);
  c.allocation_length = allocation_length;
  return c;
}

Cdb log_sense(std::uint8_t page, std::uint16_t allocation_length) {
  Cdb c;
  c.size = 10;
  c.what = "LOG SENSE page " + hex_byte(page & 0x3fU);
  c.bytes[0] = 0x4d;
  // PC 01b: cumulative values, as sg_logs and tapeinfo ask.
  c.bytes[2] = static_cast<std::uint8_t>(0x40U | (page & 0x3fU));
  put16(c, 7, allocation_length);
  c.allocation_length = allocation_length;
  return c;
}

Cdb read_attribute(std::uint32_t allocation_length) {
  Cdb c;
  c.size = 16;
  c.what = "READ ATTRIBUTE";
  c.bytes[0] = 0x8c;
  put32(c, 10, allocation_length);
  c.allocation_length = allocation_length;
  return c;
}

Cdb security_protocol_in(std::uint8_t protocol, std::uint16_t specific,
                         std::uint32_t allocation_length) {
  Cdb c;
  c.size = 12;
  c.what = "SECURITY PROTOCOL IN protocol " + hex_byte(protocol) + " page " +
           hex_byte(specific >> 8U) + hex_byte(specific & 0xffU).substr(2);
  c.bytes[0] = 0xa2;
  c.bytes[1] = protocol;
  put16(c, 2, specific);
  put32(c, 6, allocation_length);
  c.allocation_length = allocation_length;
  return c;
}

Cdb request_sense(std::uint8_t allocation_length) {
  Cdb c;
  c.size = 6;
  c.what = "REQUEST SENSE";
  c.bytes[0] = 0x03;
  c.bytes[4] = allocation_length;
  c.allocation_length = allocation_length;
  return c;
}

Cdb health_cdb(HealthQuery query) {
  switch (query) {
    case HealthQuery::inquiry: return inquiry();
    case HealthQuery::tapealert: return log_sense(tapealert_page);
    case HealthQuery::capacity: return log_sense(tape_capacity_page);
    case HealthQuery::attributes: return read_attribute();
    case HealthQuery::encryption:
      return security_protocol_in(tape_encryption_protocol, data_encryption_status_page);
    case HealthQuery::unit_serial_number: return inquiry_vpd(unit_serial_number_page);
    case HealthQuery::supported_vpd_pages: return inquiry_vpd(supported_vpd_pages_page);
    case HealthQuery::manufacturer_serial_number: return inquiry_vpd(manufacturer_serial_number_page);
    case HealthQuery::tapealert_supported: return inquiry_vpd(tapealert_supported_page);
  }
  return inquiry();  // not reached: every query is one of the above
}

Cdb health_cdb(HealthQuery query, std::uint32_t allocation_length) {
  auto length = static_cast<std::uint16_t>(std::min(allocation_length, max_allocation_length));
  switch (query) {
    case HealthQuery::inquiry: return inquiry(length);
    case HealthQuery::tapealert: return log_sense(tapealert_page, length);
    case HealthQuery::capacity: return log_sense(tape_capacity_page, length);
    case HealthQuery::attributes: return read_attribute(length);
    case HealthQuery::encryption:
      return security_protocol_in(tape_encryption_protocol, data_encryption_status_page, length);
    case HealthQuery::unit_serial_number: return inquiry_vpd(unit_serial_number_page, length);
    case HealthQuery::supported_vpd_pages: return inquiry_vpd(supported_vpd_pages_page, length);
    case HealthQuery::manufacturer_serial_number:
      return inquiry_vpd(manufacturer_serial_number_page, length);
    case HealthQuery::tapealert_supported: return inquiry_vpd(tapealert_supported_page, length);
  }
  return inquiry(length);  // not reached: every query is one of the above
}

}  // namespace tk::scsi
