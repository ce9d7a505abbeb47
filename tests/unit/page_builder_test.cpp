// The drive replies lib/scsi/page_builder.cpp encodes: byte layouts checked
// against SPC-4/SSC-4 offsets, and read back by the parsers of pages.hpp.
#include "../../lib/scsi/page_builder.hpp"

#include <gtest/gtest.h>

#include "../../lib/scsi/pages.hpp"

namespace {

namespace scsi = tk::scsi;

TEST(PageBuilder, InquiryIsStandardDataOfASequentialAccessDevice) {
  auto data = scsi::build_inquiry("TAPEKIT", "VIRTUAL TAPE", "0001");
  ASSERT_EQ(data.size(), 36u);
  EXPECT_EQ(data[0], 0x01);  // peripheral device type
  EXPECT_EQ(data[1], 0x80);  // RMB
  EXPECT_EQ(data[4], 31);    // additional length: n - 5
  EXPECT_EQ(data[15], ' ');  // vendor padded to 8
  scsi::Inquiry i = scsi::parse_inquiry(data);
  EXPECT_EQ(i.device_type, 1u);
  EXPECT_EQ(i.vendor, "TAPEKIT");
  EXPECT_EQ(i.product, "VIRTUAL TAPE");
  EXPECT_EQ(i.revision, "0001");
}

TEST(PageBuilder, TapeAlertHasSixtyFourParametersAndTheFlagsSet) {
  auto data = scsi::build_tapealert_page((std::uint64_t{1} << 2) | (std::uint64_t{1} << 63));
  ASSERT_EQ(data.size(), 4u + 64 * 5);
  EXPECT_EQ(data[0], 0x2e);
  EXPECT_EQ((data[2] << 8) | data[3], 320);
  // Flag 3's parameter: code 0x0003, control 0x03, length 1, value 1.
  EXPECT_EQ(data[4 + 2 * 5 + 1], 3);
  EXPECT_EQ(data[4 + 2 * 5 + 2], 0x03);
  EXPECT_EQ(data[4 + 2 * 5 + 3], 1);
  EXPECT_EQ(data[4 + 2 * 5 + 4], 1);
  auto flags = scsi::parse_tapealert_page(data).flags;
  ASSERT_EQ(flags.size(), 2u);
  EXPECT_EQ(flags[0].number, 3);
  EXPECT_EQ(flags[1].number, 64);
  EXPECT_TRUE(scsi::parse_tapealert_page(scsi::build_tapealert_page(0)).flags.empty());
}

TEST(PageBuilder, TapeCapacityReportsPartitionZero) {
  auto parts = scsi::parse_tape_capacity_page(scsi::build_tape_capacity_page(89, 100)).partitions;
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].partition, 0);
  EXPECT_EQ(parts[0].remaining_mib, 89u);
  EXPECT_EQ(parts[0].maximum_mib, 100u);
}

TEST(PageBuilder, AttributesReadBackAsTheCartridgeMemory) {
  scsi::AttributeList list;
  list.add_binary(scsi::mam::load_count, 7, 8);
  list.add_ascii(scsi::mam::manufacturer, "TAPEKIT", 8);
  list.add_binary(scsi::mam::density_code, 0x5e, 1);
  list.add_ascii(scsi::mam::barcode, "ABC123L8", 32);
  auto data = list.bytes();
  ASSERT_EQ(data.size(), 4u + (5 + 8) + (5 + 8) + (5 + 1) + (5 + 32));
  EXPECT_EQ(data[3], data.size() - 4);  // AVAILABLE DATA
  EXPECT_EQ(data[4 + 2], 0x80);         // read only, binary
  scsi::Cartridge c = scsi::cartridge_from(scsi::parse_attributes(data));
  EXPECT_EQ(c.load_count, 7u);
  EXPECT_EQ(c.manufacturer, "TAPEKIT");
  EXPECT_EQ(c.density_code, 0x5eu);
  EXPECT_EQ(c.barcode, "ABC123L8");
  EXPECT_FALSE(c.serial_number);
}

}  // namespace
