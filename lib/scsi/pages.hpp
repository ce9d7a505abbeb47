// Defensive parsers for what a tape drive returns to the commands of
// cdb.hpp. A reply that is short, truncated or inconsistent throws
// PageError naming the page and the byte offset; nothing is guessed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../error.hpp"
#include "cdb.hpp"

namespace tk::scsi {

using Bytes = std::span<const std::uint8_t>;

// A malformed reply: what() reads "PAGE, byte OFFSET: PROBLEM".
class PageError : public tk::Error {
 public:
  PageError(std::string page, std::size_t offset, const std::string& problem);
  const char* what() const noexcept override { return text_.c_str(); }
  std::size_t offset() const noexcept { return offset_; }

 private:
  std::size_t offset_;
  std::string text_;
};

// Standard INQUIRY data (SPC-4 6.6.2), its ASCII fields trimmed.
struct Inquiry {
  unsigned device_type = 0;  // 0x01: sequential-access (a tape drive)
  std::string vendor, product, revision;
};
Inquiry parse_inquiry(Bytes data);

// The page codes LOG SENSE page 0x00 lists.
std::vector<std::uint8_t> parse_supported_log_pages(Bytes data);

// TapeAlert (SSC-4 Annex A): flags 1..64, each with its severity.
enum class Severity { information, warning, critical };
std::string_view severity_name(Severity severity);  // "Information", "Warning", "Critical"
struct TapeAlertFlag {
  int number = 0;
  std::string_view name;
  Severity severity = Severity::information;
};
// The flag's name and severity as SSC gives them (reserved ones too).
TapeAlertFlag tapealert_flag(int number);
// What LOG SENSE page 0x2E says: the active flags, in flag order, and the
// codes of the parameters that are no flag (vendor-specific, reserved, or
// a flag without its value byte), in page order. Those are skipped so that
// one of them never hides a flag the drive raised.
struct TapeAlertPage {
  std::vector<TapeAlertFlag> flags;
  std::vector<std::uint16_t> unknown_codes;
};
TapeAlertPage parse_tapealert_page(Bytes data);
// Flags as a set, bit n-1 for flag n (as a drive state keeps them and
// build_tapealert_page takes them), and back, in flag order.
std::uint64_t tapealert_mask(const std::vector<TapeAlertFlag>& flags);
std::vector<TapeAlertFlag> tapealert_flags(std::uint64_t mask);

// LOG SENSE page 0x31 (SSC-4 8.2.4): capacities in MiB of the main
// partition (0) and the alternate one (1), each as reported.
struct PartitionCapacity {
  int partition = 0;
  std::optional<std::uint32_t> remaining_mib;
  std::optional<std::uint32_t> maximum_mib;
};
// The partitions the page reports, and the codes of the parameters it
// holds that are not SSC's 4-byte capacities (vendor-specific codes, or a
// length sg_logs does not decode either), skipped and named.
struct TapeCapacityPage {
  std::vector<PartitionCapacity> partitions;
  std::vector<std::uint16_t> unknown_codes;
};
TapeCapacityPage parse_tape_capacity_page(Bytes data);
// A capacity field at its largest value: saturated, as SPC-4's log
// counters saturate, so more than the page can say. tapekit's virtual tape
// without a capacity reports it for both fields of partition 0, and mt
// reads it as "unlimited" (no cartridge holds 4 PiB).
inline constexpr std::uint32_t no_capacity_limit_mib = 0xFFFFFFFF;

// One attribute of a READ ATTRIBUTE reply (SPC-4 7.4).
enum class AttributeFormat { binary = 0, ascii = 1, text = 2, reserved = 3 };
struct Attribute {
  std::uint16_t id = 0;
  AttributeFormat format = AttributeFormat::binary;
  bool read_only = false;
  std::vector<std::uint8_t> value;
  std::size_t offset = 0;  // of the attribute's header in the reply
};
std::vector<Attribute> parse_attributes(Bytes data);

// MAM attribute identifiers (SPC-4 7.4.2, as sg3_utils names them).
namespace mam {
inline constexpr std::uint16_t remaining_capacity = 0x0000;
inline constexpr std::uint16_t maximum_capacity = 0x0001;
inline constexpr std::uint16_t load_count = 0x0003;
inline constexpr std::uint16_t mib_written_in_life = 0x0220;
inline constexpr std::uint16_t mib_read_in_life = 0x0221;
inline constexpr std::uint16_t manufacturer = 0x0400;
inline constexpr std::uint16_t serial_number = 0x0401;
inline constexpr std::uint16_t density_code = 0x0405;
inline constexpr std::uint16_t manufacture_date = 0x0406;
inline constexpr std::uint16_t medium_type = 0x0408;
inline constexpr std::uint16_t barcode = 0x0806;
}  // namespace mam

// The cartridge memory attributes mt names; absent ones stay empty. A
// binary one may come in any size up to 8 bytes (drives send a 4-byte load
// count), a text one as ASCII or TEXT (UTF-8). Every other attribute, and
// a named one in a form that is not its own, is in others, by number.
struct Cartridge {
  std::optional<std::string> barcode, serial_number, manufacturer, manufacture_date;
  std::optional<unsigned> medium_type, density_code;
  std::optional<std::uint64_t> remaining_mib, maximum_mib;
  std::optional<std::uint64_t> load_count, mib_written, mib_read;
  std::vector<Attribute> others;
};
Cartridge cartridge_from(const std::vector<Attribute>& attributes);

// SECURITY PROTOCOL IN 0x20 page 0x0020, Data Encryption Status (SSC-4 8.5.2.4).
struct EncryptionStatus {
  unsigned encryption_mode = 0;  // 0 disable, 1 external, 2 encrypt
  unsigned decryption_mode = 0;  // 0 disable, 1 raw, 2 decrypt, 3 mixed
  unsigned algorithm_index = 0;
  std::uint32_t key_instance_counter = 0;
};
EncryptionStatus parse_encryption_status(Bytes data);

// INQUIRY VPD page 0x80, Unit Serial Number (SPC-4 7.8.18), trimmed.
std::string parse_unit_serial_number(Bytes data);
// INQUIRY VPD page 0x00, Supported VPD Pages (SPC-4 7.8.16): the page
// codes the drive lists, in its order.
std::vector<std::uint8_t> parse_supported_vpd_pages(Bytes data);
// INQUIRY VPD page 0xB1, Manufacturer-assigned Serial Number (SSC-4
// 8.4.3), without the spaces and NULs around it: empty where the drive
// leaves the field blank, as SSC asks when it has none.
std::string parse_manufacturer_serial_number(Bytes data);
// INQUIRY VPD page 0xB2, TapeAlert Supported Flags (SSC-4 8.4.4): bit n-1
// for flag n, as tapealert_mask. A page without its 8 flag bytes is
// malformed, as sg_vpd finds it ("length too short").
std::uint64_t parse_tapealert_supported(Bytes data);

// How long a whole reply to query is by the header it starts with, that
// header being reply_header_size(query) bytes (0: the command's fixed
// allocation length takes it all). Drives answer the header to an
// allocation length that short, as sg_logs' first LOG SENSE relies on.
std::size_t reply_header_size(HealthQuery query);
std::size_t whole_reply_length(HealthQuery query, Bytes header);
std::string_view encryption_mode_name(unsigned mode);  // "disable", "external", "encrypt"
std::string_view decryption_mode_name(unsigned mode);  // "disable", "raw", "decrypt", "mixed"

// Sense data, fixed or descriptor format (SPC-4 4.5).
struct Sense {
  unsigned key = 0, asc = 0, ascq = 0;
};
std::optional<Sense> parse_sense(Bytes data);
std::string_view sense_key_name(unsigned key);

}  // namespace tk::scsi
