// The one model of a drive's status: struct mtget and TapeStatus convert
// into each other without loss, on <sys/mtio.h>'s field layout.
#include "../../lib/tape/tape_status.hpp"

#include <gtest/gtest.h>
#include <sys/mtio.h>

namespace {

TEST(TapeStatus, DsregPacksDensityAboveBlockSize) {
  EXPECT_EQ(tk::make_dsreg(0x40, 512), 0x40000200);
  EXPECT_EQ(tk::dsreg_density(0x40000200), 0x40u);
  EXPECT_EQ(tk::dsreg_block_size(0x40000200), 512u);
  // Out-of-range parts are cut to their fields, not spilled into the other.
  EXPECT_EQ(tk::make_dsreg(0x1ff, 0x1ffffff), static_cast<std::int64_t>(0xffffffffU));
  EXPECT_EQ(tk::erreg_soft_errors(0x12345), 0x2345ul);
}

TEST(TapeStatus, GmtBitsAreTheHeadersTests) {
  EXPECT_NE(GMT_BOT(tk::gmt::bot), 0);
  EXPECT_NE(GMT_ONLINE(tk::gmt::online), 0);
  EXPECT_EQ(tk::gmt::wr_prot, 0x04000000u);
  EXPECT_EQ(tk::gmt::cln, 0x00008000u);
}

TEST(TapeStatus, MtgetRoundTripKeepsEveryModelledBit) {
  tk::MtGet g;
  g.type = MT_ISSCSI2;
  g.resid = 1;
  g.dsreg = tk::make_dsreg(3, 32768);
  g.gstat = static_cast<std::int64_t>(tk::gmt::bot | tk::gmt::online | tk::gmt::wr_prot |
                                      tk::gmt::d_6250 | tk::gmt::cln);
  g.erreg = 7;
  g.fileno = 2;
  g.blkno = 9;
  tk::TapeStatus s = tk::status_from_mtget(g);
  EXPECT_TRUE(s.bot && s.online && s.write_protected && s.cleaning_requested);
  EXPECT_FALSE(s.eof || s.eod || s.door_open);
  EXPECT_EQ(s.density, 3u);
  EXPECT_EQ(s.block_size, 32768u);
  EXPECT_EQ(s.partition, 1);
  EXPECT_FALSE(s.compression_known);
  tk::MtGet back = tk::mtget_from_status(s);
  EXPECT_EQ(back.gstat, g.gstat);  // D_6250 follows density 3, as st sets it
  EXPECT_EQ(back.dsreg, g.dsreg);
  EXPECT_EQ(back.fileno, 2);
  EXPECT_EQ(back.blkno, 9);
  EXPECT_EQ(back.erreg, 7);
}

TEST(TapeStatus, PositionsBeyondAnIntAreClamped) {
  tk::TapeStatus s;
  s.file_number = std::int64_t{1} << 40;
  s.block_number = -1;
  tk::MtGet g = tk::mtget_from_status(s);
  EXPECT_EQ(g.fileno, INT32_MAX);
  EXPECT_EQ(g.blkno, -1);
}

}  // namespace
