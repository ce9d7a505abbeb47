// Parsers for INQUIRY data and VPD pages 0x00, 0x80, 0xB1 and 0xB2, log
// pages 0x00, 0x2E and 0x31, READ ATTRIBUTE replies, the Data Encryption
// Status page and sense data. Layouts: SPC-4 6.6.2, 7.8, 7.3.2, 7.4, 4.5;
// SSC-4 8.2.3, 8.2.4, 8.4.3, 8.4.4, 8.5.2.4 and Annex A.
#include "pages.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <type_traits>

namespace tk::scsi {
namespace {

std::uint32_t be(Bytes data, std::size_t at, std::size_t width) {
  std::uint32_t value = 0;
  for (std::size_t i = 0; i < width; ++i) value = (value << 8) | data[at + i];
  return value;
}

std::uint64_t be64(const std::vector<std::uint8_t>& data) {
  std::uint64_t value = 0;
  for (auto b : data) value = (value << 8) | b;
  return value;
}

std::string hex(unsigned value, int digits) {
  static constexpr char xdigits[] = "0123456789abcdef";
  std::string out = "0x";
  for (int shift = 4 * (digits - 1); shift >= 0; shift -= 4) out += xdigits[(value >> shift) & 0xfU];
  return out;
}

// Trims the trailing spaces and NULs SPC pads ASCII fields with.
std::string trimmed(Bytes field) {
  std::string out(field.begin(), field.end());
  while (!out.empty() && (out.back() == ' ' || out.back() == '\0')) out.pop_back();
  return out;
}

struct Table {
  std::string_view name;
  Severity severity;
};

constexpr Severity I = Severity::information;
constexpr Severity W = Severity::warning;
constexpr Severity C = Severity::critical;

// SSC-4 Annex A, Table A.2: flag names and types. 40-46 were the loader
// flags of the first TapeAlert specification, obsolete since SSC-3.
constexpr std::array<Table, 64> tapealert_table{{
    {"Read warning", W},
    {"Write warning", W},
    {"Hard error", W},
    {"Media", C},
    {"Read failure", C},
    {"Write failure", C},
    {"Media life", W},
    {"Not data grade", W},
    {"Write protect", C},
    {"No removal", I},
    {"Cleaning media", I},
    {"Unsupported format", I},
    {"Recoverable mechanical cartridge failure", C},
    {"Unrecoverable mechanical cartridge failure", C},
    {"Memory chip in cartridge failure", W},
    {"Forced eject", C},
    {"Read only format", W},
    {"Tape directory corrupted on load", W},
    {"Nearing media life", I},
    {"Cleaning required", C},
    {"Cleaning requested", W},
    {"Expired cleaning media", C},
    {"Invalid cleaning tape", C},
    {"Retension requested", W},
    {"Dual port interface error", W},
    {"Cooling fan failing", W},
    {"Power supply failure", W},
    {"Power consumption", W},
    {"Drive maintenance", W},
    {"Hardware A", C},
    {"Hardware B", C},
    {"Interface", W},
    {"Eject media", C},
    {"Microcode update fail", W},
    {"Drive humidity", W},
    {"Drive temperature", W},
    {"Drive voltage", W},
    {"Predictive failure", C},
    {"Diagnostics required", W},
    {"Obsolete", I},
    {"Obsolete", I},
    {"Obsolete", I},
    {"Obsolete", I},
    {"Obsolete", I},
    {"Obsolete", I},
    {"Obsolete", I},
    {"External data encryption control - communications failure", W},
    {"External data encryption control - key manager returned error", W},
    {"Diminished native capacity", I},
    {"Lost statistics", W},
    {"Tape directory invalid at unload", W},
    {"Tape system area write failure", C},
    {"Tape system area read failure", C},
    {"No start of data", C},
    {"Loading failure", C},
    {"Unrecoverable unload failure", C},
    {"Automation interface failure", C},
    {"Firmware failure", W},
    {"WORM medium - integrity check failed", W},
    {"WORM medium - overwrite attempted", W},
    {"Encryption policy violation", W},
    {"Reserved", I},
    {"Reserved", I},
    {"Reserved", I},
}};

struct LogParameter {
  std::uint16_t code = 0;
  Bytes value;
  std::size_t offset = 0;
};

// The parameters of a log page (SPC-4 7.3.2), checked against the page's
// own length and the bytes returned.
std::vector<LogParameter> log_parameters(Bytes data, std::uint8_t page, const std::string& name) {
  if (data.size() < 4)
    throw PageError(name, data.size(), "page header needs 4 bytes, the drive returned " +
                                           std::to_string(data.size()));
  if ((data[0] & 0x3fU) != page)
    throw PageError(name, 0, "page code is " + hex(data[0] & 0x3fU, 2));
  std::size_t end = 4 + be(data, 2, 2);
  if (end > data.size())
    throw PageError(name, 2, "page length " + std::to_string(end - 4) + " runs past the " +
                                 std::to_string(data.size()) + " bytes returned");
  std::vector<LogParameter> out;
  for (std::size_t at = 4; at < end;) {
    if (end - at < 4) throw PageError(name, at, "parameter header cut short by the page end");
    std::size_t length = data[at + 3];
    if (at + 4 + length > end)
      throw PageError(name, at, "parameter " + hex(be(data, at, 2), 4) + " of length " +
                                    std::to_string(length) + " runs past the page end");
    out.push_back({static_cast<std::uint16_t>(be(data, at, 2)), data.subspan(at + 4, length), at});
    at += 4 + length;
  }
  return out;
}

}  // namespace

PageError::PageError(std::string page, std::size_t offset, const std::string& problem)
    : Error(EBADMSG, page), offset_(offset),
      text_(page + ", byte " + std::to_string(offset) + ": " + problem) {}

Inquiry parse_inquiry(Bytes data) {
  if (data.size() < 36)
    throw PageError("INQUIRY", data.size(), "standard data needs 36 bytes, the drive returned " +
                                                std::to_string(data.size()));
  Inquiry out;
  out.device_type = data[0] & 0x1fU;
  out.vendor = trimmed(data.subspan(8, 8));
  out.product = trimmed(data.subspan(16, 16));
  out.revision = trimmed(data.subspan(32, 4));
  return out;
}

std::vector<std::uint8_t> parse_supported_log_pages(Bytes data) {
  const std::string name = "LOG SENSE page 0x00";
  if (data.size() < 4)
    throw PageError(name, data.size(), "page header needs 4 bytes, the drive returned " +
                                           std::to_string(data.size()));
  if ((data[0] & 0x3fU) != 0) throw PageError(name, 0, "page code is " + hex(data[0] & 0x3fU, 2));
  std::size_t end = 4 + be(data, 2, 2);
  if (end > data.size())
    throw PageError(name, 2, "page length " + std::to_string(end - 4) + " runs past the " +
                                 std::to_string(data.size()) + " bytes returned");
  std::vector<std::uint8_t> out;
  for (std::size_t at = 4; at < end; ++at) out.push_back(data[at] & 0x3fU);
  return out;
}

std::string_view severity_name(Severity severity) {
  switch (severity) {
    case Severity::information: return "Information";
    case Severity::warning: return "Warning";
    case Severity::critical: return "Critical";
  }
  return "Information";
}

TapeAlertFlag tapealert_flag(int number) {
  if (number < 1 || number > 64) return {number, "Unknown", Severity::information};
  const Table& t = tapealert_table[static_cast<std::size_t>(number - 1)];
  return {number, t.name, t.severity};
}

std::uint64_t tapealert_mask(const std::vector<TapeAlertFlag>& flags) {
  std::uint64_t mask = 0;
  for (const TapeAlertFlag& flag : flags)
    if (flag.number >= 1 && flag.number <= 64) mask |= std::uint64_t{1} << (flag.number - 1);
  return mask;
}

std::vector<TapeAlertFlag> tapealert_flags(std::uint64_t mask) {
  std::vector<TapeAlertFlag> flags;
  for (int n = 1; n <= 64; ++n)
    if (mask >> (n - 1) & 1) flags.push_back(tapealert_flag(n));
  return flags;
}

TapeAlertPage parse_tapealert_page(Bytes data) {
  const std::string name = "LOG SENSE page 0x2e";
  std::array<bool, 65> active{};
  TapeAlertPage out;
  for (const auto& p : log_parameters(data, tapealert_page, name)) {
    if (p.code < 1 || p.code > 64 || p.value.empty()) {
      out.unknown_codes.push_back(p.code);
      continue;
    }
    // A flag sent twice is active if either says so: a raised flag is
    // never dropped.
    if (p.value[0] & 1U) active[p.code] = true;
  }
  for (int n = 1; n <= 64; ++n)
    if (active[static_cast<std::size_t>(n)]) out.flags.push_back(tapealert_flag(n));
  return out;
}

TapeCapacityPage parse_tape_capacity_page(Bytes data) {
  const std::string name = "LOG SENSE page 0x31";
  std::array<std::optional<std::uint32_t>, 5> values{};
  std::array<std::size_t, 5> offsets{};
  TapeCapacityPage out;
  for (const auto& p : log_parameters(data, tape_capacity_page, name)) {
    // Codes 1-4 are SSC's, 4 bytes each; sg_logs decodes no other length,
    // and other codes are vendor-specific.
    if (p.code < 1 || p.code > 4 || p.value.size() != 4 || values[p.code]) {
      out.unknown_codes.push_back(p.code);
      continue;
    }
    values[p.code] = be(p.value, 0, 4);
    offsets[p.code] = p.offset;
  }
  for (int partition = 0; partition < 2; ++partition) {
    auto remaining = static_cast<std::size_t>(1 + partition);  // 1 main, 2 alternate
    auto maximum = static_cast<std::size_t>(3 + partition);    // 3 main, 4 alternate
    if (!values[remaining] && !values[maximum]) continue;
    if (values[remaining] && values[maximum] && *values[remaining] > *values[maximum])
      throw PageError(name, offsets[remaining],
                      "remaining capacity " + std::to_string(*values[remaining]) +
                          " MiB exceeds the maximum " + std::to_string(*values[maximum]) + " MiB");
    out.partitions.push_back({partition, values[remaining], values[maximum]});
  }
  return out;
}

std::vector<Attribute> parse_attributes(Bytes data) {
  const std::string name = "READ ATTRIBUTE";
  if (data.size() < 4)
    throw PageError(name, data.size(), "header needs 4 bytes, the drive returned " +
                                           std::to_string(data.size()));
  std::size_t end = 4 + static_cast<std::size_t>(be(data, 0, 4));
  if (end > data.size())
    throw PageError(name, 0, "available data " + std::to_string(end - 4) + " runs past the " +
                                 std::to_string(data.size()) + " bytes returned");
  std::vector<Attribute> out;
  for (std::size_t at = 4; at < end;) {
    if (end - at < 5) throw PageError(name, at, "attribute header cut short by the data end");
    std::size_t length = be(data, at + 3, 2);
    if (at + 5 + length > end)
      throw PageError(name, at, "attribute " + hex(be(data, at, 2), 4) + " of length " +
                                    std::to_string(length) + " runs past the data end");
    Attribute a;
    a.id = static_cast<std::uint16_t>(be(data, at, 2));
    a.read_only = (data[at + 2] & 0x80U) != 0;
    a.format = static_cast<AttributeFormat>(data[at + 2] & 3U);
    auto value = data.subspan(at + 5, length);
    a.value.assign(value.begin(), value.end());
    a.offset = at;
    out.push_back(std::move(a));
    at += 5 + length;
  }
  return out;
}

Cartridge cartridge_from(const std::vector<Attribute>& attributes) {
  // Each returns false when the attribute is not in a form its name
  // allows; it is then kept among the others.
  auto binary = [](const Attribute& a, auto& field) {
    if (a.format != AttributeFormat::binary || a.value.empty() || a.value.size() > 8) return false;
    field = static_cast<std::remove_reference_t<decltype(*field)>>(be64(a.value));
    return true;
  };
  auto byte = [](const Attribute& a, std::optional<unsigned>& field) {
    if (a.format != AttributeFormat::binary || a.value.size() != 1) return false;
    field = a.value[0];
    return true;
  };
  // ASCII holds bytes 0x20-0x7e (SPC-4 7.4.2.2); TEXT is UTF-8, which the
  // reports escape where it is not printable.
  auto text = [](const Attribute& a, std::optional<std::string>& field) {
    if (a.format == AttributeFormat::ascii) {
      for (auto b : a.value)
        if (b != 0 && (b < 0x20 || b > 0x7e)) return false;
    } else if (a.format != AttributeFormat::text) {
      return false;
    }
    field = trimmed(Bytes(a.value.data(), a.value.size()));
    return true;
  };
  Cartridge c;
  for (const auto& a : attributes) {
    bool named = false;
    switch (a.id) {
      case mam::remaining_capacity: named = binary(a, c.remaining_mib); break;
      case mam::maximum_capacity: named = binary(a, c.maximum_mib); break;
      case mam::barcode: named = text(a, c.barcode); break;
      case mam::serial_number: named = text(a, c.serial_number); break;
      case mam::manufacturer: named = text(a, c.manufacturer); break;
      case mam::manufacture_date: named = text(a, c.manufacture_date); break;
      case mam::medium_type: named = byte(a, c.medium_type); break;
      case mam::density_code: named = byte(a, c.density_code); break;
      case mam::load_count: named = binary(a, c.load_count); break;
      case mam::mib_written_in_life: named = binary(a, c.mib_written); break;
      case mam::mib_read_in_life: named = binary(a, c.mib_read); break;
      default: break;
    }
    if (!named) c.others.push_back(a);
  }
  return c;
}

EncryptionStatus parse_encryption_status(Bytes data) {
  const std::string name = "SECURITY PROTOCOL IN protocol 0x20 page 0x0020";
  if (data.size() < 4)
    throw PageError(name, data.size(), "page header needs 4 bytes, the drive returned " +
                                           std::to_string(data.size()));
  if (be(data, 0, 2) != data_encryption_status_page)
    throw PageError(name, 0, "page code is " + hex(be(data, 0, 2), 4));
  std::size_t end = 4 + be(data, 2, 2);
  if (end > data.size())
    throw PageError(name, 2, "page length " + std::to_string(end - 4) + " runs past the " +
                                 std::to_string(data.size()) + " bytes returned");
  if (end < 12)
    throw PageError(name, 2, "page length " + std::to_string(end - 4) +
                                 " leaves out the key instance counter (8 needed)");
  EncryptionStatus s;
  s.encryption_mode = data[5];
  s.decryption_mode = data[6];
  s.algorithm_index = data[7];
  s.key_instance_counter = be(data, 8, 4);
  return s;
}

namespace {

// A VPD page's body (SPC-4 7.8.1): the bytes its PAGE LENGTH gives after
// the 4-byte header, once the page code is the one asked for.
Bytes vpd_body(Bytes data, std::uint8_t page) {
  const std::string name = "INQUIRY VPD page " + hex(page, 2);
  if (data.size() < 4)
    throw PageError(name, data.size(), "page header needs 4 bytes, the drive returned " +
                                           std::to_string(data.size()));
  if (data[1] != page) throw PageError(name, 1, "page code is " + hex(data[1], 2));
  std::size_t end = 4 + be(data, 2, 2);
  if (end > data.size())
    throw PageError(name, 2, "page length " + std::to_string(end - 4) + " runs past the " +
                                 std::to_string(data.size()) + " bytes returned");
  return data.subspan(4, end - 4);
}

// An ASCII field SPC-4 pads with spaces on the left or the right (and some
// drives with NULs on the right).
std::string trimmed_both(Bytes field) {
  std::string out = trimmed(field);
  out.erase(0, out.find_first_not_of(' '));
  return out;
}

}  // namespace

std::string parse_unit_serial_number(Bytes data) {
  return trimmed_both(vpd_body(data, unit_serial_number_page));
}

std::vector<std::uint8_t> parse_supported_vpd_pages(Bytes data) {
  Bytes body = vpd_body(data, supported_vpd_pages_page);
  return {body.begin(), body.end()};
}

std::string parse_manufacturer_serial_number(Bytes data) {
  return trimmed_both(vpd_body(data, manufacturer_serial_number_page));
}

std::uint64_t parse_tapealert_supported(Bytes data) {
  Bytes body = vpd_body(data, tapealert_supported_page);
  // SSC gives the page 12 bytes, the last 4 reserved; sg_vpd needs only
  // the 8 that hold flags 1 to 64, and so does this.
  if (body.size() < 8)
    throw PageError("INQUIRY VPD page " + hex(tapealert_supported_page, 2), 2,
                    "page length " + std::to_string(body.size()) +
                        " is too short for the 64 flags (8 bytes needed)");
  std::uint64_t mask = 0;
  for (int flag = 1; flag <= 64; ++flag) {
    const std::uint8_t byte = body[static_cast<std::size_t>((flag - 1) / 8)];
    if ((byte >> (7 - (flag - 1) % 8)) & 1U) mask |= std::uint64_t{1} << (flag - 1);
  }
  return mask;
}

std::size_t reply_header_size(HealthQuery query) {
  switch (query) {
    case HealthQuery::tapealert:
    case HealthQuery::capacity:
    case HealthQuery::attributes:
    case HealthQuery::encryption:
    case HealthQuery::unit_serial_number:
    case HealthQuery::supported_vpd_pages:
    case HealthQuery::manufacturer_serial_number:
    case HealthQuery::tapealert_supported: return 4;
    case HealthQuery::inquiry: break;
  }
  return 0;
}

std::size_t whole_reply_length(HealthQuery query, Bytes header) {
  if (reply_header_size(query) == 0 || header.size() < reply_header_size(query)) return header.size();
  // READ ATTRIBUTE's header is AVAILABLE DATA (SPC-4 6.17.2); the log
  // pages, the security protocol page and the VPD pages all give their
  // length in bytes 2-3.
  if (query == HealthQuery::attributes) return 4 + std::size_t{be(header, 0, 4)};
  return 4 + std::size_t{be(header, 2, 2)};
}

std::string_view encryption_mode_name(unsigned mode) {
  switch (mode) {
    case 0: return "disable";
    case 1: return "external";
    case 2: return "encrypt";
    default: return "reserved";
  }
}

std::string_view decryption_mode_name(unsigned mode) {
  switch (mode) {
    case 0: return "disable";
    case 1: return "raw";
    case 2: return "decrypt";
    case 3: return "mixed";
    default: return "reserved";
  }
}

std::optional<Sense> parse_sense(Bytes data) {
  if (data.empty()) return std::nullopt;
  unsigned code = data[0] & 0x7fU;
  if ((code == 0x70 || code == 0x71) && data.size() >= 14)
    return Sense{data[2] & 0x0fU, data[12], data[13]};
  if ((code == 0x72 || code == 0x73) && data.size() >= 4)
    return Sense{data[1] & 0x0fU, data[2], data[3]};
  if ((code == 0x70 || code == 0x71) && data.size() >= 3) return Sense{data[2] & 0x0fU, 0, 0};
  return std::nullopt;
}

std::string_view sense_key_name(unsigned key) {
  static constexpr std::array<std::string_view, 16> names{
      "NO SENSE",        "RECOVERED ERROR", "NOT READY",      "MEDIUM ERROR",
      "HARDWARE ERROR",  "ILLEGAL REQUEST", "UNIT ATTENTION", "DATA PROTECT",
      "BLANK CHECK",     "VENDOR SPECIFIC", "COPY ABORTED",   "ABORTED COMMAND",
      "RESERVED",        "VOLUME OVERFLOW", "MISCOMPARE",     "COMPLETED"};
  return names[key & 0x0fU];
}

}  // namespace tk::scsi
