// lib/scsi: the CDBs tapekit sends, and the parsers of what a drive returns.
// Pages are built here byte by byte from SPC-4 and SSC-4; every malformed
// one must be a PageError naming the page and the byte, never a figure.
#include "../../lib/scsi/pages.hpp"

#include <cstdint>
#include <gtest/gtest.h>
#include <initializer_list>
#include <string>
#include <vector>

#include "../../lib/scsi/cdb.hpp"
#include "../../lib/scsi/page_builder.hpp"

namespace {

using Page = std::vector<std::uint8_t>;
namespace scsi = tk::scsi;

void add16(Page& p, unsigned v) {
  p.push_back(static_cast<std::uint8_t>(v >> 8));
  p.push_back(static_cast<std::uint8_t>(v));
}
void add32(Page& p, std::uint32_t v) {
  add16(p, v >> 16);
  add16(p, v & 0xffff);
}
void set16(Page& p, std::size_t at, std::size_t v) {
  p[at] = static_cast<std::uint8_t>(v >> 8);
  p[at + 1] = static_cast<std::uint8_t>(v);
}

Page tapealert_page(std::initializer_list<int> active) {
  Page p{0x2e, 0, 0, 0};
  for (unsigned flag = 1; flag <= 64; ++flag) {
    add16(p, flag);
    p.push_back(0x03);
    p.push_back(1);
    bool on = false;
    for (int a : active) on = on || a == static_cast<int>(flag);
    p.push_back(on ? 1 : 0);
  }
  set16(p, 2, p.size() - 4);
  return p;
}

Page capacity_page(std::initializer_list<std::pair<unsigned, std::uint32_t>> params) {
  Page p{0x31, 0, 0, 0};
  for (auto [code, value] : params) {
    add16(p, code);
    p.push_back(0);
    p.push_back(4);
    add32(p, value);
  }
  set16(p, 2, p.size() - 4);
  return p;
}

void add_attribute(Page& p, unsigned id, int format, Page value) {
  add16(p, id);
  p.push_back(static_cast<std::uint8_t>(0x80 | format));
  add16(p, static_cast<unsigned>(value.size()));
  p.insert(p.end(), value.begin(), value.end());
}

Page ascii(const std::string& text, std::size_t size) {
  Page v(size, ' ');
  for (std::size_t i = 0; i < text.size() && i < size; ++i) v[i] = static_cast<std::uint8_t>(text[i]);
  return v;
}

Page binary(std::uint64_t value, std::size_t size) {
  Page v(size);
  for (std::size_t i = 0; i < size; ++i) v[size - 1 - i] = static_cast<std::uint8_t>(value >> (8 * i));
  return v;
}

Page with_length(Page attrs) {
  Page p;
  add32(p, static_cast<std::uint32_t>(attrs.size()));
  p.insert(p.end(), attrs.begin(), attrs.end());
  return p;
}

Page encryption_page(unsigned enc, unsigned dec, unsigned alg, std::uint32_t kic) {
  Page p;
  add16(p, 0x0020);
  add16(p, 20);
  p.push_back(0x42);
  p.push_back(static_cast<std::uint8_t>(enc));
  p.push_back(static_cast<std::uint8_t>(dec));
  p.push_back(static_cast<std::uint8_t>(alg));
  add32(p, kic);
  p.resize(24);
  return p;
}

template <class Fn>
std::string refusal(Fn fn) {
  try {
    fn();
  } catch (const scsi::PageError& e) {
    EXPECT_EQ(e.errnum(), EBADMSG);
    return e.what();
  }
  return "no error";
}

TEST(ScsiCdb, LogSenseAsksForCumulativeValuesOfOnePage) {
  auto c = scsi::log_sense(0x2e, 0x1234);
  EXPECT_EQ(c.size, 10U);
  EXPECT_EQ(c.bytes[0], 0x4d);
  EXPECT_EQ(c.bytes[2], 0x6e);
  EXPECT_EQ(c.bytes[7], 0x12);
  EXPECT_EQ(c.bytes[8], 0x34);
  EXPECT_EQ(c.what, "LOG SENSE page 0x2e");
}

TEST(ScsiCdb, ReadAttributeSecurityProtocolInInquiryAndRequestSense) {
  auto r = scsi::read_attribute(0x10000);
  EXPECT_EQ(r.size, 16U);
  EXPECT_EQ(r.bytes[0], 0x8c);
  EXPECT_EQ(r.bytes[1], 0x00);
  EXPECT_EQ(r.bytes[11], 0x01);
  EXPECT_EQ(r.bytes[12], 0x00);
  auto s = scsi::security_protocol_in(0x20, 0x0020, 8192);
  EXPECT_EQ(s.size, 12U);
  EXPECT_EQ(s.bytes[0], 0xa2);
  EXPECT_EQ(s.bytes[1], 0x20);
  EXPECT_EQ(s.bytes[3], 0x20);
  EXPECT_EQ(s.bytes[8], 0x20);
  EXPECT_EQ(s.what, "SECURITY PROTOCOL IN protocol 0x20 page 0x0020");
  auto i = scsi::inquiry(96);
  EXPECT_EQ(i.size, 6U);
  EXPECT_EQ(i.bytes[0], 0x12);
  EXPECT_EQ(i.bytes[4], 96);
  auto q = scsi::request_sense(18);
  EXPECT_EQ(q.bytes[0], 0x03);
  EXPECT_EQ(q.bytes[4], 18);
}

TEST(TapeAlert, ActiveFlagsComeWithNameAndSeverity) {
  auto flags = scsi::parse_tapealert_page(tapealert_page({20, 3, 64})).flags;
  ASSERT_EQ(flags.size(), 3U);
  EXPECT_EQ(flags[0].number, 3);
  EXPECT_EQ(flags[0].name, "Hard error");
  EXPECT_EQ(flags[0].severity, scsi::Severity::warning);
  EXPECT_EQ(flags[1].number, 20);
  EXPECT_EQ(flags[1].name, "Cleaning required");
  EXPECT_EQ(flags[1].severity, scsi::Severity::critical);
  EXPECT_EQ(flags[2].number, 64);
  EXPECT_TRUE(scsi::parse_tapealert_page(tapealert_page({})).flags.empty());
}

TEST(TapeAlert, MaskAndFlagsAreOneSetTwoWays) {
  auto flags = scsi::parse_tapealert_page(tapealert_page({20, 3, 64})).flags;
  std::uint64_t mask = scsi::tapealert_mask(flags);
  EXPECT_EQ(mask, (std::uint64_t{1} << 2) | (std::uint64_t{1} << 19) | (std::uint64_t{1} << 63));
  auto back = scsi::tapealert_flags(mask);
  ASSERT_EQ(back.size(), 3U);
  EXPECT_EQ(back[0].number, 3);
  EXPECT_EQ(back[1].name, "Cleaning required");
  EXPECT_EQ(back[2].number, 64);
  EXPECT_TRUE(scsi::tapealert_flags(0).empty());
}

TEST(TapeAlert, SeveritiesFollowSscAnnexA) {
  EXPECT_EQ(scsi::tapealert_flag(4).severity, scsi::Severity::critical);
  EXPECT_EQ(scsi::tapealert_flag(10).severity, scsi::Severity::information);
  EXPECT_EQ(scsi::tapealert_flag(21).severity, scsi::Severity::warning);
  EXPECT_EQ(scsi::tapealert_flag(55).name, "Loading failure");
  EXPECT_EQ(scsi::severity_name(scsi::Severity::critical), "Critical");
}

TEST(TapeAlert, MalformedPagesNameTheByte) {
  auto p = tapealert_page({1});
  set16(p, 2, p.size());  // 4 more than there are
  EXPECT_EQ(refusal([&] { scsi::parse_tapealert_page(p); }),
            "LOG SENSE page 0x2e, byte 2: page length 324 runs past the 324 bytes returned");
  Page wrong{0x31, 0, 0, 0};
  EXPECT_EQ(refusal([&] { scsi::parse_tapealert_page(wrong); }),
            "LOG SENSE page 0x2e, byte 0: page code is 0x31");
  Page shorter{0x2e, 0};
  EXPECT_EQ(refusal([&] { scsi::parse_tapealert_page(shorter); }),
            "LOG SENSE page 0x2e, byte 2: page header needs 4 bytes, the drive returned 2");
  Page past{0x2e, 0, 0, 5, 0, 1, 3, 9, 1};
  EXPECT_EQ(refusal([&] { scsi::parse_tapealert_page(past); }),
            "LOG SENSE page 0x2e, byte 4: parameter 0x0001 of length 9 runs past the page end");
  Page cut{0x2e, 0, 0, 2, 0, 1};
  EXPECT_EQ(refusal([&] { scsi::parse_tapealert_page(cut); }),
            "LOG SENSE page 0x2e, byte 4: parameter header cut short by the page end");
}

// A parameter that is no flag (a vendor's 0x8001, the reserved 0x0000, a
// flag without its value byte) is skipped and named; the flags beside it
// still count.
TEST(TapeAlert, ParametersThatAreNoFlagAreSkippedAndNamed) {
  Page p{0x2e, 0, 0, 0};
  for (unsigned code : {0x0000U, 0x0003U, 0x8001U, 0x0014U, 0x0015U}) {
    add16(p, code);
    p.push_back(0x03);
    p.push_back(code == 0x15 ? 0 : 1);
    if (code != 0x15) p.push_back(1);
  }
  set16(p, 2, p.size() - 4);
  auto page = scsi::parse_tapealert_page(p);
  ASSERT_EQ(page.flags.size(), 2U);
  EXPECT_EQ(page.flags[0].number, 3);
  EXPECT_EQ(page.flags[1].number, 20);
  EXPECT_EQ(page.flags[1].severity, scsi::Severity::critical);
  EXPECT_EQ(page.unknown_codes, (std::vector<std::uint16_t>{0x0000, 0x8001, 0x0015}));
  // A flag sent twice is active when either copy says so.
  Page twice{0x2e, 0, 0, 10, 0, 7, 3, 1, 1, 0, 7, 3, 1, 0};
  auto repeated = scsi::parse_tapealert_page(twice);
  ASSERT_EQ(repeated.flags.size(), 1U);
  EXPECT_EQ(repeated.flags[0].number, 7);
  EXPECT_TRUE(repeated.unknown_codes.empty());
}

TEST(TapeCapacity, PartitionsInMiB) {
  auto page = scsi::parse_tape_capacity_page(
      capacity_page({{1, 5000000}, {2, 40}, {3, 11444224}, {4, 100}, {0x8000, 7}}));
  EXPECT_EQ(page.unknown_codes, std::vector<std::uint16_t>{0x8000});
  const auto& parts = page.partitions;
  ASSERT_EQ(parts.size(), 2U);
  EXPECT_EQ(parts[0].partition, 0);
  EXPECT_EQ(*parts[0].remaining_mib, 5000000U);
  EXPECT_EQ(*parts[0].maximum_mib, 11444224U);
  EXPECT_EQ(parts[1].partition, 1);
  EXPECT_EQ(*parts[1].remaining_mib, 40U);
  EXPECT_EQ(*parts[1].maximum_mib, 100U);
  auto one = scsi::parse_tape_capacity_page(capacity_page({{3, 10}})).partitions;
  ASSERT_EQ(one.size(), 1U);
  EXPECT_FALSE(one[0].remaining_mib);
}

// sg_logs decodes 4-byte capacities only; one of another length is
// skipped and named, and the others still read.
TEST(TapeCapacity, ParametersOfAnotherLengthAreSkippedAndNamed) {
  Page p{0x31, 0, 0, 0, 0, 1, 0, 8, 0, 0, 0, 0, 0, 0, 0, 9};
  add16(p, 3);
  p.push_back(0);
  p.push_back(4);
  add32(p, 100);
  Page shorter{0, 2, 0, 2, 0, 9};
  p.insert(p.end(), shorter.begin(), shorter.end());
  set16(p, 2, p.size() - 4);
  auto page = scsi::parse_tape_capacity_page(p);
  ASSERT_EQ(page.partitions.size(), 1U);
  EXPECT_FALSE(page.partitions[0].remaining_mib);
  EXPECT_EQ(page.partitions[0].maximum_mib, 100U);
  EXPECT_EQ(page.unknown_codes, (std::vector<std::uint16_t>{0x0001, 0x0002}));
  auto twice = scsi::parse_tape_capacity_page(capacity_page({{1, 2}, {1, 3}, {3, 5}}));
  EXPECT_EQ(twice.partitions[0].remaining_mib, 2U);
  EXPECT_EQ(twice.unknown_codes, std::vector<std::uint16_t>{0x0001});
}

TEST(TapeCapacity, MalformedPagesNameTheByte) {
  EXPECT_EQ(refusal([&] { scsi::parse_tape_capacity_page(capacity_page({{1, 200}, {3, 100}})); }),
            "LOG SENSE page 0x31, byte 4: remaining capacity 200 MiB exceeds the maximum 100 MiB");
  Page past{0x31, 0, 0, 8, 0, 1, 0, 9, 0, 0, 0, 1};
  EXPECT_EQ(refusal([&] { scsi::parse_tape_capacity_page(past); }),
            "LOG SENSE page 0x31, byte 4: parameter 0x0001 of length 9 runs past the page end");
}

TEST(Cartridge, AttributesAndAbsentOnes) {
  Page a;
  add_attribute(a, 0x0003, 0, binary(42, 8));
  add_attribute(a, 0x0220, 0, binary(1500000, 8));
  add_attribute(a, 0x0400, 1, ascii("FUJIFILM", 8));
  add_attribute(a, 0x0405, 0, binary(0x5e, 1));
  add_attribute(a, 0x0806, 1, ascii("ABC123L8", 32));
  add_attribute(a, 0x0999, 2, ascii("kept", 10));
  auto c = scsi::cartridge_from(scsi::parse_attributes(with_length(a)));
  ASSERT_EQ(c.others.size(), 1U);
  EXPECT_EQ(c.others[0].id, 0x0999U);
  EXPECT_EQ(*c.load_count, 42U);
  EXPECT_EQ(*c.mib_written, 1500000U);
  EXPECT_EQ(*c.manufacturer, "FUJIFILM");
  EXPECT_EQ(*c.density_code, 0x5eU);
  EXPECT_EQ(*c.barcode, "ABC123L8");
  EXPECT_FALSE(c.mib_read);
  EXPECT_FALSE(c.serial_number);
  EXPECT_FALSE(c.manufacture_date);
  EXPECT_FALSE(c.medium_type);
  auto none = scsi::cartridge_from(scsi::parse_attributes(with_length({})));
  EXPECT_FALSE(none.barcode);
}

// Drives send a 4-byte load count, a TEXT barcode; the capacities of
// attributes 0x0000 and 0x0001 have names; an attribute in a form its name
// does not allow is kept by number, never a reason to drop the rest.
TEST(Cartridge, OtherSizesAndFormatsAndUnnamedAttributes) {
  Page a;
  add_attribute(a, 0x0000, 0, binary(1000, 8));
  add_attribute(a, 0x0001, 0, binary(2000, 8));
  add_attribute(a, 0x0003, 0, binary(42, 4));
  add_attribute(a, 0x0806, 2, ascii("CLN001L8", 32));
  add_attribute(a, 0x0401, 1, Page{'A', 0x01, 'B'});
  add_attribute(a, 0x0408, 0, binary(1, 2));
  add_attribute(a, 0x1234, 0, binary(77, 8));
  auto c = scsi::cartridge_from(scsi::parse_attributes(with_length(a)));
  EXPECT_EQ(c.remaining_mib, 1000U);
  EXPECT_EQ(c.maximum_mib, 2000U);
  EXPECT_EQ(c.load_count, 42U);
  EXPECT_EQ(c.barcode, "CLN001L8");
  EXPECT_FALSE(c.serial_number);
  EXPECT_FALSE(c.medium_type);
  ASSERT_EQ(c.others.size(), 3U);
  EXPECT_EQ(c.others[0].id, 0x0401U);
  EXPECT_EQ(c.others[1].id, 0x0408U);
  EXPECT_EQ(c.others[2].id, 0x1234U);
}

TEST(Cartridge, MalformedListsNameTheByte) {
  Page c = with_length(Page{0x08, 0x06, 0x81, 0x00, 0x20, 'A'});
  EXPECT_EQ(refusal([&] { scsi::parse_attributes(c); }),
            "READ ATTRIBUTE, byte 4: attribute 0x0806 of length 32 runs past the data end");
  Page d = with_length(Page{0x08, 0x06});
  EXPECT_EQ(refusal([&] { scsi::parse_attributes(d); }),
            "READ ATTRIBUTE, byte 4: attribute header cut short by the data end");
  Page e{0, 0, 0, 9, 1};
  EXPECT_EQ(refusal([&] { scsi::parse_attributes(e); }),
            "READ ATTRIBUTE, byte 0: available data 9 runs past the 5 bytes returned");
}

TEST(Encryption, StatusPage) {
  auto s = scsi::parse_encryption_status(encryption_page(2, 3, 1, 7));
  EXPECT_EQ(s.encryption_mode, 2U);
  EXPECT_EQ(s.decryption_mode, 3U);
  EXPECT_EQ(s.algorithm_index, 1U);
  EXPECT_EQ(s.key_instance_counter, 7U);
  EXPECT_EQ(scsi::encryption_mode_name(2), "encrypt");
  EXPECT_EQ(scsi::decryption_mode_name(3), "mixed");
}

TEST(Encryption, MalformedPagesNameTheByte) {
  auto p = encryption_page(0, 0, 0, 0);
  set16(p, 2, 4);
  EXPECT_EQ(refusal([&] { scsi::parse_encryption_status(p); }),
            "SECURITY PROTOCOL IN protocol 0x20 page 0x0020, byte 2: page length 4 leaves out "
            "the key instance counter (8 needed)");
  auto q = encryption_page(0, 0, 0, 0);
  q.resize(10);
  EXPECT_EQ(refusal([&] { scsi::parse_encryption_status(q); }),
            "SECURITY PROTOCOL IN protocol 0x20 page 0x0020, byte 2: page length 20 runs past "
            "the 10 bytes returned");
  auto r = encryption_page(0, 0, 0, 0);
  r[1] = 0x21;
  EXPECT_EQ(refusal([&] { scsi::parse_encryption_status(r); }),
            "SECURITY PROTOCOL IN protocol 0x20 page 0x0020, byte 0: page code is 0x0021");
}

TEST(Inquiry, UnitSerialNumberPage) {
  Page p{0x01, 0x80, 0, 12, ' ', ' ', '1', '0', '6', '8', '0', '0', '0', '1', ' ', 0};
  EXPECT_EQ(scsi::parse_unit_serial_number(p), "10680001");
  Page past{0x01, 0x80, 0, 12, '1'};
  EXPECT_EQ(refusal([&] { scsi::parse_unit_serial_number(past); }),
            "INQUIRY VPD page 0x80, byte 2: page length 12 runs past the 5 bytes returned");
  Page other{0x01, 0x83, 0, 0};
  EXPECT_EQ(refusal([&] { scsi::parse_unit_serial_number(other); }),
            "INQUIRY VPD page 0x80, byte 1: page code is 0x83");
}

TEST(Inquiry, SupportedVpdPages) {
  Page p{0x01, 0x00, 0, 6, 0x00, 0x80, 0x83, 0xb0, 0xb1, 0xb2};
  EXPECT_EQ(scsi::parse_supported_vpd_pages(p), (std::vector<std::uint8_t>{0x00, 0x80, 0x83, 0xb0, 0xb1, 0xb2}));
  Page past{0x01, 0x00, 0, 6, 0x00};
  EXPECT_EQ(refusal([&] { scsi::parse_supported_vpd_pages(past); }),
            "INQUIRY VPD page 0x00, byte 2: page length 6 runs past the 5 bytes returned");
}

// tgt's page: 64 NULs, which sg_vpd prints as an empty serial number.
TEST(Inquiry, ManufacturerSerialNumberPage) {
  Page p{0x01, 0xb1, 0, 12, ' ', ' ', '1', '0', 'W', 'T', '0', '1', '2', '3', '4', '5'};
  EXPECT_EQ(scsi::parse_manufacturer_serial_number(p), "10WT012345");
  Page blank(4 + 64, 0);
  blank[0] = 0x01;
  blank[1] = 0xb1;
  blank[3] = 64;
  EXPECT_EQ(scsi::parse_manufacturer_serial_number(blank), "");
  Page spaces{0x01, 0xb1, 0, 4, ' ', ' ', ' ', ' '};
  EXPECT_EQ(scsi::parse_manufacturer_serial_number(spaces), "");
  Page none{0x01, 0xb1, 0, 0};
  EXPECT_EQ(scsi::parse_manufacturer_serial_number(none), "");
  Page other{0x01, 0x80, 0, 0};
  EXPECT_EQ(refusal([&] { scsi::parse_manufacturer_serial_number(other); }),
            "INQUIRY VPD page 0xb1, byte 1: page code is 0x80");
}

// Flag 1 is the first byte's top bit (SSC-4 8.4.4); tgt sends a page
// length of 4, which sg_vpd calls too short.
TEST(Inquiry, TapeAlertSupportedFlagsPage) {
  Page p{0x01, 0xb2, 0, 12, 0x80, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x01, 0, 0, 0, 0};
  EXPECT_EQ(scsi::parse_tapealert_supported(p), (1ULL << 0) | (1ULL << 19) | (1ULL << 63));
  Page flags_only{0x01, 0xb2, 0, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  EXPECT_EQ(scsi::parse_tapealert_supported(flags_only), ~0ULL);
  Page tgt{0x01, 0xb2, 0, 4, 0, 0, 0, 0};
  EXPECT_EQ(refusal([&] { scsi::parse_tapealert_supported(tgt); }),
            "INQUIRY VPD page 0xb2, byte 2: page length 4 is too short for the 64 flags (8 bytes needed)");
  EXPECT_EQ(scsi::parse_tapealert_supported(scsi::build_tapealert_supported_page(0x8000000000080001ULL)),
            0x8000000000080001ULL);
}

// The header of each reply gives the length of the whole (sg_logs' first
// LOG SENSE asks for 4 bytes); INQUIRY's fixed length takes it all.
TEST(ReplyLength, HeadersGiveTheWholeLength) {
  using Q = scsi::HealthQuery;
  Page log{0x2e, 0, 0x28, 0x10};
  EXPECT_EQ(scsi::reply_header_size(Q::tapealert), 4U);
  EXPECT_EQ(scsi::whole_reply_length(Q::tapealert, log), 4U + 0x2810U);
  EXPECT_EQ(scsi::whole_reply_length(Q::capacity, log), 4U + 0x2810U);
  Page attrs{0, 1, 0, 2};
  EXPECT_EQ(scsi::whole_reply_length(Q::attributes, attrs), 4U + 0x10002U);
  Page spin{0, 0x20, 0, 20};
  EXPECT_EQ(scsi::whole_reply_length(Q::encryption, spin), 24U);
  Page vpd{0x01, 0x80, 0, 10};
  EXPECT_EQ(scsi::whole_reply_length(Q::unit_serial_number, vpd), 14U);
  EXPECT_EQ(scsi::reply_header_size(Q::inquiry), 0U);
  auto big = scsi::health_cdb(Q::tapealert, 0x12345);
  EXPECT_EQ(big.allocation_length, scsi::max_allocation_length);
  EXPECT_EQ(big.bytes[7], 0xff);
  EXPECT_EQ(big.bytes[8], 0xff);
  auto vpd_cdb = scsi::health_cdb(Q::unit_serial_number);
  EXPECT_EQ(vpd_cdb.bytes[1], 0x01);
  EXPECT_EQ(vpd_cdb.bytes[2], 0x80);
  EXPECT_EQ(vpd_cdb.what, "INQUIRY VPD page 0x80");
  EXPECT_EQ(scsi::health_cdb(Q::supported_vpd_pages).bytes[2], 0x00);
  EXPECT_EQ(scsi::health_cdb(Q::manufacturer_serial_number).what, "INQUIRY VPD page 0xb1");
  EXPECT_EQ(scsi::health_cdb(Q::tapealert_supported).what, "INQUIRY VPD page 0xb2");
  Page tas{0x01, 0xb2, 0, 12};
  EXPECT_EQ(scsi::whole_reply_length(Q::tapealert_supported, tas), 16U);
}

TEST(Inquiry, StandardDataAndShortReplies) {
  Page p(36, ' ');
  p[0] = 0x01;
  std::string v = "IBM     ULT3580-TD8     Q3F4";
  for (std::size_t i = 0; i < v.size(); ++i) p[8 + i] = static_cast<std::uint8_t>(v[i]);
  auto i = scsi::parse_inquiry(p);
  EXPECT_EQ(i.device_type, 1U);
  EXPECT_EQ(i.vendor, "IBM");
  EXPECT_EQ(i.product, "ULT3580-TD8");
  EXPECT_EQ(i.revision, "Q3F4");
  p.resize(20);
  EXPECT_EQ(refusal([&] { scsi::parse_inquiry(p); }),
            "INQUIRY, byte 20: standard data needs 36 bytes, the drive returned 20");
}

TEST(Sense, FixedAndDescriptorFormats) {
  Page fixed(18, 0);
  fixed[0] = 0x70;
  fixed[2] = 0x05;
  fixed[12] = 0x24;
  auto s = scsi::parse_sense(fixed);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->key, 5U);
  EXPECT_EQ(s->asc, 0x24U);
  auto d = scsi::parse_sense(Page{0x72, 0x02, 0x04, 0x01});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->key, 2U);
  EXPECT_EQ(d->ascq, 1U);
  EXPECT_FALSE(scsi::parse_sense(Page{0x12}));
  EXPECT_EQ(scsi::sense_key_name(5), "ILLEGAL REQUEST");
}

TEST(SupportedLogPages, ListsPageCodes) {
  auto pages = scsi::parse_supported_log_pages(Page{0x00, 0, 0, 3, 0x00, 0x2e, 0x31});
  EXPECT_EQ(pages, (std::vector<std::uint8_t>{0x00, 0x2e, 0x31}));
  EXPECT_EQ(refusal([&] { scsi::parse_supported_log_pages(Page{0x00, 0, 0, 9, 0}); }),
            "LOG SENSE page 0x00, byte 2: page length 9 runs past the 5 bytes returned");
}

}  // namespace
