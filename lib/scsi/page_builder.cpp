// Drive replies encoded from the standards' layouts (SPC-4 6.6.2, 7.3,
// 7.4, 7.8; SSC-4 8.2.3, 8.2.4, 8.4.4), never from what the parsers expect.
#include "page_builder.hpp"

#include <algorithm>

#include "cdb.hpp"

namespace tk::scsi {
namespace {

void put_be(std::vector<std::uint8_t>& out, std::uint64_t value, std::size_t size) {
  for (std::size_t i = size; i-- > 0;) out.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
}

void put_ascii(std::vector<std::uint8_t>& out, std::string_view text, std::size_t size) {
  for (std::size_t i = 0; i < size; ++i)
    out.push_back(static_cast<std::uint8_t>(i < text.size() ? text[i] : ' '));
}

// A log page (SPC-4 7.3.1): PAGE CODE, SUBPAGE 0, PAGE LENGTH, then the
// parameters already encoded.
std::vector<std::uint8_t> log_page(std::uint8_t page, const std::vector<std::uint8_t>& parameters) {
  std::vector<std::uint8_t> out{page, 0x00};
  put_be(out, parameters.size(), 2);
  out.insert(out.end(), parameters.begin(), parameters.end());
  return out;
}

// One log parameter (SPC-4 7.3.2.2): code, control byte, length, value.
void put_parameter(std::vector<std::uint8_t>& out, std::uint16_t code, std::uint8_t control,
                   std::uint64_t value, std::size_t size) {
  put_be(out, code, 2);
  out.push_back(control);
  out.push_back(static_cast<std::uint8_t>(size));
  put_be(out, value, size);
}

}  // namespace

std::vector<std::uint8_t> build_inquiry(std::string_view vendor, std::string_view product,
                                        std::string_view revision) {
  std::vector<std::uint8_t> out{
      0x01,  // connected sequential-access device
      0x80,  // RMB: the medium is removable
      0x06,  // VERSION: SPC-4
      0x02,  // RESPONSE DATA FORMAT 2
      31,    // ADDITIONAL LENGTH: the 36 bytes of standard data
      0x00, 0x00, 0x00};
  put_ascii(out, vendor, 8);
  put_ascii(out, product, 16);
  put_ascii(out, revision, 4);
  return out;
}

std::vector<std::uint8_t> build_vpd_page(std::uint8_t page, const std::vector<std::uint8_t>& body) {
  std::vector<std::uint8_t> out{0x01, page};  // connected sequential-access device
  put_be(out, body.size(), 2);
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

std::vector<std::uint8_t> build_tapealert_supported_page(std::uint64_t flags) {
  std::vector<std::uint8_t> body(12, 0);  // 8 bytes of flags, 4 reserved
  for (unsigned flag = 1; flag <= 64; ++flag)
    if ((flags >> (flag - 1)) & 1u)
      body[(flag - 1) / 8] |= static_cast<std::uint8_t>(0x80u >> ((flag - 1) % 8));
  return build_vpd_page(tapealert_supported_page, body);
}

std::vector<std::uint8_t> build_tapealert_page(std::uint64_t flags) {
  std::vector<std::uint8_t> parameters;
  for (unsigned flag = 1; flag <= 64; ++flag) {
    // Control byte: FORMAT AND LINKING 11b, a binary format list parameter.
    put_parameter(parameters, static_cast<std::uint16_t>(flag), 0x03, (flags >> (flag - 1)) & 1u, 1);
  }
  return log_page(tapealert_page, parameters);
}

std::vector<std::uint8_t> build_tape_capacity_page(std::uint32_t remaining_mib,
                                                   std::uint32_t maximum_mib) {
  std::vector<std::uint8_t> parameters;
  put_parameter(parameters, 0x0001, 0x00, remaining_mib, 4);  // main partition remaining
  put_parameter(parameters, 0x0003, 0x00, maximum_mib, 4);    // main partition maximum
  return log_page(tape_capacity_page, parameters);
}

void AttributeList::add_header(std::uint16_t id, unsigned format, std::size_t size) {
  put_be(list_, id, 2);
  list_.push_back(static_cast<std::uint8_t>(0x80u | format));  // READ ONLY: the drive keeps them
  put_be(list_, size, 2);
}

void AttributeList::add_binary(std::uint16_t id, std::uint64_t value, std::size_t size) {
  add_header(id, 0x00, size);
  put_be(list_, value, std::min<std::size_t>(size, 8));
}

void AttributeList::add_ascii(std::uint16_t id, std::string_view text, std::size_t size) {
  add_header(id, 0x01, size);
  put_ascii(list_, text, size);
}

std::vector<std::uint8_t> AttributeList::bytes() const {
  std::vector<std::uint8_t> out;
  put_be(out, list_.size(), 4);
  out.insert(out.end(), list_.begin(), list_.end());
  return out;
}

}  // namespace tk::scsi
